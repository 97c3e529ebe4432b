package config

import (
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/store"
)

var (
	memoryFields         = []string{"bank", "max_entries", "max_bytes", "search_limit"}
	knowledgeFields      = []string{"chunk_bytes", "entries"}
	knowledgeEntryFields = []string{"description", "text", "file"}
)

// memoryDef is an agent's memory: section.
type memoryDef struct {
	bank        string // "" until build: agent:<name>
	limits      store.BankLimits
	searchLimit int
}

// memory parses an agent's or swarm's memory: section.
func (p *parser) memory(n *yaml.Node, what string) *memoryDef {
	if isNull(n) {
		return nil
	}
	what += ": memory"
	fs := p.fields(n, what, memoryFields)
	m := &memoryDef{}
	if fd, ok := fs["bank"]; ok {
		m.bank = p.str(fd.val, what, "bank")
		// Check the name as it would be filled: placeholders stand for
		// non-empty values.
		probe := m.bank
		for strings.Contains(probe, "{") {
			i := strings.IndexByte(probe, '{')
			j := strings.IndexByte(probe[i:], '}')
			if j < 0 {
				p.errf(fd.val, "%s: bank %q: unclosed {", what, m.bank)
				return m
			}
			probe = probe[:i] + "x" + probe[i+j+1:]
		}
		if err := store.CheckBank(probe); err != nil {
			p.errf(fd.val, "%s: bank %q: %v", what, m.bank, err)
		}
	}
	count := func(name string, dst *int64) {
		fd, ok := fs[name]
		if !ok || isNull(fd.val) {
			return
		}
		v := fd.val
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(dst) != nil || *dst < 0 {
			p.errf(v, "%s: %s: want a positive number, got %s", what, name, describe(v))
			*dst = 0
		}
	}
	count("max_entries", &m.limits.MaxEntries)
	count("max_bytes", &m.limits.MaxBytes)
	var sl int64
	count("search_limit", &sl)
	m.searchLimit = int(min(sl, 100))
	return m
}

// knowledge parses an agent's or swarm's knowledge: section. Relative
// file paths resolve against the file's directory.
func (p *parser) knowledge(n *yaml.Node, what string) *memory.Knowledge {
	if isNull(n) {
		return nil
	}
	what += ": knowledge"
	fs := p.fields(n, what, knowledgeFields)
	k := &memory.Knowledge{}
	if fd, ok := fs["chunk_bytes"]; ok && !isNull(fd.val) {
		v := fd.val
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&k.ChunkBytes) != nil || k.ChunkBytes < 64 {
			p.errf(v, "%s: chunk_bytes: want a number of at least 64, got %s", what, describe(v))
			k.ChunkBytes = 0
		}
	}
	fd, ok := fs["entries"]
	if !ok || isNull(fd.val) {
		p.errf(n, "%s: entries: want a mapping from entry names to entries", what)
		return k
	}
	es := deref(fd.val)
	if es.Kind != yaml.MappingNode {
		p.errf(es, "%s: entries: want a mapping from entry names to entries, got %s", what, describe(es))
		return k
	}
	for i := 0; i+1 < len(es.Content); i += 2 {
		key, v := deref(es.Content[i]), es.Content[i+1]
		e := memory.KnowledgeEntry{Name: key.Value}
		ew := what + ": entry " + e.Name
		efs := p.fields(v, ew, knowledgeEntryFields)
		if f, ok := efs["description"]; ok {
			e.Description = p.str(f.val, ew, "description")
		}
		if f, ok := efs["text"]; ok {
			e.Text = p.str(f.val, ew, "text")
		}
		if f, ok := efs["file"]; ok {
			if e.File = p.str(f.val, ew, "file"); e.File != "" && !filepath.IsAbs(e.File) {
				e.File = filepath.Join(p.dir, e.File)
			}
		}
		if (e.Text == "") == (e.File == "") {
			p.errf(v, "%s: give text or file, one of them", ew)
		}
		k.Entries = append(k.Entries, e)
	}
	if err := k.Check(); err != nil {
		p.errf(es, "%s: %v", what, err)
	}
	return k
}

// memoryTools returns the tools of a's memory and knowledge: the memory
// tools over the bank in st, and the knowledge lookup. A fresh Knowledge
// is made per build, as Register makes new values each call.
func memoryTools(a *agentDef, st store.Store) []swarm.Tool {
	var out []swarm.Tool
	if a.memory != nil {
		bank := a.memory.bank
		if bank == "" {
			bank = "agent:" + a.name
		}
		m := &memory.Memory{Store: st, Bank: bank, Limits: a.memory.limits, SearchLimit: a.memory.searchLimit}
		out = append(out, m.Tools()...)
	}
	if a.knowledge != nil {
		k := &memory.Knowledge{Entries: a.knowledge.Entries, ChunkBytes: a.knowledge.ChunkBytes}
		out = append(out, k.Tool())
	}
	return out
}
