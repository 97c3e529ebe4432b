package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/network"
)

// Version is the file format version this package reads.
const Version = 1

// The fields of each kind of mapping, in the order they are documented.
var (
	topFields     = []string{"version", "model", "models", "prices", "tools", "mcp_servers", "agents", "swarms", "conversations", "teams", "workflows", "a2a_agents", "serve", "network", "share", "guardrails", "limits", "temporal"}
	toolFields    = []string{"description", "command", "input_schema", "timeout", "dir", "env"}
	agentFields   = []string{"description", "instructions", "model", "tools", "toolsets", "handoffs", "max_turns", "skills", "absorb", "network_tools", "guardrails", "compaction", "memory", "knowledge"}
	swarmFields   = []string{"description", "instructions", "model", "handoffs", "tools", "toolsets", "max_turns", "input", "result_schema", "tags", "absorb", "loop", "builtins", "network_tools", "guardrails", "hold_stream", "compaction", "memory", "knowledge"}
	handoffFields = []string{"agent", "swarm", "description", "customizable"}
	loopFields    = []string{"strategy", "evaluator", "stall_threshold", "max_replans", "max_rounds", "on_exhausted"}
	limitFields   = []string{"model_calls", "tool_calls"}
)

// Tool names a swarm orchestrator already has.
var builtinTools = []string{"complete", "pause", "fail"}

// Environment variables set by command tools themselves.
var reservedEnv = []string{"SWARM_RUN_ID", "SWARM_STEP_KEY", "SWARM_IDEMPOTENCY_KEY", "SWARM_TOOL"}

const handoffPrefix = "handoff_to_"

// maxName is the longest name of an agent, tool or swarm (the length limit
// of tool names); an agent's name must leave room for handoffPrefix.
const maxName = 64

// parser reads one file. Mistakes are collected in errs; parsing continues
// after a mistake whenever the rest of the file can still be checked.
type parser struct {
	file string // name for errors
	dir  string // absolute directory relative paths resolve against
	errs []*Error

	tools      map[string]*toolDef
	toolNames  []string
	agentLines map[string]int
	agentNames []string
	swarmLines map[string]int
	swarmNames []string
	// convLines are the conversations' names, which no handoff may name.
	convLines map[string]int
	remotes   map[string]*remoteDef // a2a_agents; nil values have mistakes

	toolsets     map[string]*mcp.Toolset // nil values: definitions with mistakes
	toolsetNames []string
	mcpOAuth     map[string]*oauthDef // the oauth entries of mcp_servers

	guards     map[string]*guardDef // nil values: definitions with mistakes
	guardNames []string
}

// field is one key and value of a mapping.
type field struct{ key, val *yaml.Node }

// entry is one named definition of a section (tools, agents, swarms).
type entry struct {
	name     string
	key, val *yaml.Node
}

type toolDef struct {
	name string
	tool *commandTool // nil when the definition has mistakes
}

type handoffRef struct {
	target, description string
	// swarm: the target is a swarm of the file, run as a child run.
	swarm, customizable bool
	remote              bool // target is a remote A2A agent
}

// agentDef is what agents and swarms have in common.
type agentDef struct {
	name, description, instructions, model string
	modelLine                              int // line of model:, 0 if none
	tools                                  []*commandTool
	toolsets                               []string // names of mcp_servers
	handoffs                               []handoffRef
	maxTurns                               int
	skills                                 []skillDef // agents only
	absorb                                 absorbDef
	networkTools                           *network.Filter // nil: none
	guardrails                             []*guardDef
	compaction                             *compact.Config
	memory                                 *memoryDef        // memory:, nil if none
	knowledge                              *memory.Knowledge // knowledge:, nil if none
}

type swarmDef struct {
	agentDef
	inSchema     json.RawMessage // nil: text input
	resultSchema json.RawMessage // nil: text result
	tags         []string
	loop         *adaptive.Strategy // nil: the simple loop
	noBuiltins   bool               // builtins: false
	holdStream   bool               // hold_stream: true
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Err: fmt.Errorf(format, args...)})
}

// err returns the collected mistakes, in line order, or nil.
func (p *parser) err() error {
	switch len(p.errs) {
	case 0:
		return nil
	case 1:
		return p.errs[0]
	}
	slices.SortStableFunc(p.errs, func(a, b *Error) int { return a.Line - b.Line })
	errs := make([]error, len(p.errs))
	for i, e := range p.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

func parse(data []byte, dir, file string) (*File, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("config: directory %q: %w", dir, err)
	}
	p := &parser{file: file, dir: abs, tools: map[string]*toolDef{}, agentLines: map[string]int{}, swarmLines: map[string]int{}, remotes: map[string]*remoteDef{}, toolsets: map[string]*mcp.Toolset{}, mcpOAuth: map[string]*oauthDef{}}
	f := p.parse(data)
	if err := p.err(); err != nil {
		return nil, err
	}
	f.Path, f.Dir = file, abs
	return f, nil
}

// syntax reports the YAML parser's error in data. yaml.v3 gives the line
// where the construct around the mistake starts (an indentation mistake
// inside a mapping is reported at the mapping's first key), so the line
// reported is found again (syntaxLine): the line at which the file, read
// up to it, starts to fail with the same message.
func (p *parser) syntax(data []byte, err error) {
	msg := yamlLine.ReplaceAllString(err.Error(), "")
	line := syntaxLine(data, msg)
	if line == 0 {
		msg = err.Error() // the parser's own line, for want of a better one
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Err: fmt.Errorf("invalid YAML: %s", msg)})
}

// yamlLine is the prefix of yaml.v3's syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line \d+: `)

// syntaxLine is a 1-based line of data such that reading its YAML
// documents up to that line fails with the message msg and up to the line
// before does not (found by bisection: a mistake, once read, fails every
// longer prefix the same way); 0 if reading all of data does not fail so.
func syntaxLine(data []byte, msg string) int {
	var ends []int // ends[i]: the end of line i+1
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	fails := func(lines int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(data[:ends[lines-1]]))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				return !errors.Is(err, io.EOF) && yamlLine.ReplaceAllString(err.Error(), "") == msg
			}
		}
	}
	lo, hi := 0, len(ends) // fails(hi), and reading no line fails nothing
	if !fails(hi) {
		return 0
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; fails(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func (p *parser) parse(data []byte) *File {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.errf(nil, "file is empty (it needs at least \"version: %d\")", Version)
		} else {
			p.syntax(data, err)
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		at := &extra
		if len(extra.Content) > 0 {
			at = extra.Content[0]
		}
		p.errf(at, "a file holds a single YAML document")
		return nil
	} else if !errors.Is(err, io.EOF) {
		p.syntax(data, err)
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			p.errf(root, "file is empty (it needs at least \"version: %d\")", Version)
			return nil
		}
		root = root.Content[0]
	}
	root = deref(root)
	if root.Kind != yaml.MappingNode {
		p.errf(root, "want a mapping with version, model, tools, agents and swarms, got %s", describe(root))
		return nil
	}

	// The version comes first: fields of another version are not mistakes
	// of this one.
	var version *field
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := deref(root.Content[i]); k.Kind == yaml.ScalarNode && k.Value == "version" {
			version = &field{k, deref(root.Content[i+1])}
			break
		}
	}
	if version == nil {
		p.errf(root, "missing version: add \"version: %d\" at the top of the file", Version)
		return nil
	}
	var v int
	if version.val.Kind != yaml.ScalarNode || version.val.ShortTag() != "!!int" || version.val.Decode(&v) != nil {
		p.errf(version.val, "version: want a number such as %d, got %s", Version, describe(version.val))
		return nil
	}
	if v != Version {
		p.errf(version.val, "unsupported version %d (this build reads version %d)", v, Version)
		return nil
	}

	top := p.fields(root, "", topFields)
	f := &File{Version: v, tools: map[string]*commandTool{}}
	if fd, ok := top["model"]; ok {
		f.Model = p.modelSpec(fd.val, "model")
		f.modelLine = fd.val.Line
	}
	if fd, ok := top["serve"]; ok {
		f.Serve = p.serve(fd.val)
	}
	if fd, ok := top["limits"]; ok && !isNull(fd.val) {
		f.Limits = p.limits(fd.val)
	}
	p.models(top, f)

	// Tools.
	for _, e := range p.entries(top, "tools", "tool") {
		td := p.tool(e)
		p.tools[e.name] = td
		p.toolNames = append(p.toolNames, e.name)
		if td.tool != nil {
			f.tools[e.name] = td.tool
		}
	}
	f.toolNames = p.toolNames
	p.guardrails(top, f)
	p.mcpServers(top)
	f.toolsets, f.toolsetNames, f.mcpOAuth = p.toolsets, p.toolsetNames, p.mcpOAuth

	// Names of agents and swarms first, so that references can be checked
	// whatever the order of definitions.
	agents := p.entries(top, "agents", "agent")
	for _, e := range agents {
		p.checkName(e.key, "agent", e.name, maxName-len(handoffPrefix))
		p.agentLines[e.name] = e.key.Line
		p.agentNames = append(p.agentNames, e.name)
	}
	swarms := p.entries(top, "swarms", "swarm")
	for _, e := range swarms {
		p.checkName(e.key, "swarm", e.name, maxName)
		if line, dup := p.agentLines[e.name]; dup {
			p.errf(e.key, "swarm %s: the name is already used by the agent defined at line %d (agents and swarms share one namespace)", e.name, line)
		}
		p.swarmLines[e.name] = e.key.Line
		p.swarmNames = append(p.swarmNames, e.name)
	}
	p.convLines = sectionLines(top, "conversations")
	f.remotes = p.a2aAgents(top)

	for _, e := range agents {
		what := "agent " + e.name
		fs := p.fields(e.val, what, agentFields)
		a := &agentDef{name: e.name}
		p.common(fs, what, a, false)
		if fd, ok := fs["skills"]; ok {
			a.skills = p.skills(fd.val, what)
		}
		if fd, ok := fs["absorb"]; ok {
			a.absorb = p.absorb(fd.val, what, a.name)
		}
		f.agents = append(f.agents, a)
	}
	for _, e := range swarms {
		what := "swarm " + e.name
		fs := p.fields(e.val, what, swarmFields)
		s := &swarmDef{agentDef: agentDef{name: e.name}}
		p.common(fs, what, &s.agentDef, true)
		if fd, ok := fs["input"]; ok {
			s.inSchema = p.input(fd, what)
		}
		if fd, ok := fs["result_schema"]; ok && !isNull(fd.val) {
			s.resultSchema, _, _ = p.schema(fd.key, fd.val, what+": result_schema")
		}
		if fd, ok := fs["tags"]; ok {
			s.tags = p.strList(fd.val, what, "tags")
		}
		if fd, ok := fs["absorb"]; ok {
			s.absorb = p.absorb(fd.val, what, s.name)
		}
		if fd, ok := fs["loop"]; ok && !isNull(fd.val) {
			s.loop = p.loop(fd.val, what, s.handoffs)
		}
		if fd, ok := fs["builtins"]; ok {
			s.noBuiltins = !p.boolean(fd.val, what, "builtins")
		}
		if fd, ok := fs["hold_stream"]; ok {
			s.holdStream = p.boolean(fd.val, what, "hold_stream")
		}
		f.swarms = append(f.swarms, s)
	}
	f.conversations = p.conversations(top)
	f.teams = p.teams(top, f.conversations)
	f.workflows = p.workflows(top, f)
	uses := false
	for _, a := range f.agents {
		uses = uses || a.networkTools != nil
	}
	for _, s := range f.swarms {
		uses = uses || s.networkTools != nil
	}
	p.network(top, f, uses)
	if fd, ok := top["temporal"]; ok && !isNull(fd.val) {
		_, network := top["network"]
		_, share := top["share"]
		f.Temporal = p.temporal(fd.val, f, uses || network || share)
	}
	return f
}

// whole reads field name of fs, if given, into dst: a whole number of at
// least min.
func (p *parser) whole(fs map[string]field, what, name string, min int, dst *int) {
	fd, ok := fs[name]
	if !ok || isNull(fd.val) {
		return
	}
	v := deref(fd.val)
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(dst) != nil || *dst < min {
		p.errf(v, "%s: %s: want a whole number of at least %d, got %s", what, name, min, describe(v))
		*dst = 0
	}
}

// loop reads a swarm's loop strategy: nil for the simple loop, or the
// adaptive loop. The evaluator must be one of the swarm's agent handoffs.
func (p *parser) loop(n *yaml.Node, what string, hs []handoffRef) *adaptive.Strategy {
	what += ": loop"
	fs := p.fields(n, what, loopFields)
	l := &adaptive.Strategy{}
	// choice reads field name, one of a or b ("" if absent or wrong).
	choice := func(name, a, b string) string {
		fd, ok := fs[name]
		if !ok {
			return ""
		}
		v := p.str(fd.val, what, name)
		if v != "" && v != a && v != b {
			p.errf(fd.val, "%s: %s: want %s or %s, got %q", what, name, a, b, v)
			return ""
		}
		return v
	}
	strategy := choice("strategy", "simple", "adaptive")
	if fd, ok := fs["evaluator"]; ok {
		l.Evaluator = p.str(fd.val, what, "evaluator")
		if l.Evaluator != "" && !slices.ContainsFunc(hs, func(h handoffRef) bool { return !h.swarm && !h.remote && h.target == l.Evaluator }) {
			p.errf(fd.val, "%s: evaluator: %q is not one of the swarm's agent handoffs", what, l.Evaluator)
		}
	}
	p.whole(fs, what, "stall_threshold", 1, &l.StallThreshold)
	p.whole(fs, what, "max_replans", -1, &l.MaxReplans)
	if fd, ok := fs["max_replans"]; ok && l.MaxReplans == 0 && !isNull(fd.val) {
		l.MaxReplans = -1 // written out, 0 means none (in Go, 0 is the default)
	}
	p.whole(fs, what, "max_rounds", 1, &l.MaxRounds)
	l.OnExhausted = adaptive.Exhausted(choice("on_exhausted", string(adaptive.ExhaustedPause), string(adaptive.ExhaustedFail)))
	if strategy == "adaptive" && !slices.ContainsFunc(hs, func(h handoffRef) bool { return h.target != l.Evaluator }) {
		p.errf(n, "%s: an adaptive swarm needs at least one handoff to work with (besides its evaluator)", what)
	}
	if strategy != "adaptive" {
		if *l != (adaptive.Strategy{}) {
			p.errf(n, "%s: evaluator, stall_threshold, max_replans, max_rounds and on_exhausted need strategy: adaptive", what)
		}
		return nil
	}
	return l
}

// fields returns the fields of mapping n, reporting duplicate and unknown
// keys. A null value counts as an empty mapping.
func (p *parser) fields(n *yaml.Node, what string, known []string) map[string]field {
	n = deref(n)
	out := map[string]field{}
	if isNull(n) {
		return out
	}
	pre := what
	if pre != "" {
		pre += ": "
	}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%swant a mapping with the fields %s, got %s", pre, strings.Join(known, ", "), describe(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		switch {
		case k.ShortTag() == "!!merge":
			p.errf(k, "%smerge keys (<<) are not supported", pre)
			continue
		case k.Kind != yaml.ScalarNode:
			p.errf(k, "%swant a field name, got %s", pre, describe(k))
			continue
		}
		if prev, dup := out[k.Value]; dup {
			p.errf(k, "%sfield %q is given twice (first at line %d)", pre, k.Value, prev.key.Line)
			continue
		}
		if !slices.Contains(known, k.Value) {
			hint := suggest(k.Value, known)
			if hint == "" {
				hint = " (known fields: " + strings.Join(known, ", ") + ")"
			}
			if what == "" {
				p.errf(k, "unknown top-level field %q%s", k.Value, hint)
			} else {
				p.errf(k, "%sunknown field %q%s", pre, k.Value, hint)
			}
			continue
		}
		out[k.Value] = field{k, v}
	}
	return out
}

// entries returns the named definitions of a section, reporting duplicate
// names.
func (p *parser) entries(top map[string]field, section, kind string) []entry {
	fd, ok := top[section]
	if !ok || isNull(fd.val) {
		return nil
	}
	n := fd.val
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: want a mapping from %s name to definition, got %s", section, kind, describe(n))
		return nil
	}
	var out []entry
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" || k.ShortTag() == "!!merge" {
			p.errf(k, "%s: want a %s name, got %s", section, kind, describe(k))
			continue
		}
		if line, dup := lines[k.Value]; dup {
			p.errf(k, "duplicate %s %q (first defined at line %d)", kind, k.Value, line)
			continue
		}
		lines[k.Value] = k.Line
		out = append(out, entry{name: k.Value, key: k, val: v})
	}
	return out
}

func (p *parser) checkName(n *yaml.Node, kind, name string, maxLen int) bool {
	switch {
	case name == "":
		p.errf(n, "%s name is empty", kind)
	case len(name) > maxLen:
		why := ""
		if kind == "agent" {
			why = " (its handoff tool, " + handoffPrefix + "<name>, is limited to 64)"
		}
		p.errf(n, "%s %q: the name is longer than %d characters%s", kind, truncate(name), maxLen, why)
	case strings.ContainsFunc(name, func(r rune) bool { return !model.NameChar(r) }):
		p.errf(n, "%s %q: a name may contain only letters, digits, '_' and '-'", kind, name)
	default:
		return true
	}
	return false
}

// common reads the fields agents and swarms share.
func (p *parser) common(fs map[string]field, what string, a *agentDef, isSwarm bool) {
	if fd, ok := fs["description"]; ok {
		a.description = p.str(fd.val, what, "description")
	}
	if fd, ok := fs["instructions"]; ok {
		a.instructions = p.str(fd.val, what, "instructions")
		if strings.Contains(a.instructions, "{{") {
			if _, err := template.New("instructions").Option("missingkey=zero").Parse(a.instructions); err != nil {
				p.errf(fd.val, "%s: instructions are not a valid template: %w", what, err)
			}
		}
	}
	if fd, ok := fs["model"]; ok {
		a.model = p.modelSpec(fd.val, what+": model")
		a.modelLine = fd.val.Line
	}
	if fd, ok := fs["max_turns"]; ok && !isNull(fd.val) {
		v := fd.val
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&a.maxTurns) != nil || a.maxTurns < 0 {
			p.errf(v, "%s: max_turns: want a positive number, got %s", what, describe(v))
			a.maxTurns = 0
		}
	}
	if fd, ok := fs["tools"]; ok {
		a.tools = p.toolRefs(fd.val, what, isSwarm)
	}
	if fd, ok := fs["handoffs"]; ok {
		a.handoffs = p.handoffs(fd.val, what)
	}
	if fd, ok := fs["toolsets"]; ok {
		a.toolsets = p.toolsetRefs(fd.val, what)
	}
	if fd, ok := fs["network_tools"]; ok {
		a.networkTools = p.networkTools(fd.val, what)
	}
	if fd, ok := fs["guardrails"]; ok {
		a.guardrails = p.guardrailRefs(fd.val, what)
	}
	if fd, ok := fs["compaction"]; ok {
		a.compaction = p.compaction(fd.val, what)
	}
	if fd, ok := fs["memory"]; ok {
		a.memory = p.memory(fd.val, what)
	}
	if fd, ok := fs["knowledge"]; ok {
		a.knowledge = p.knowledge(fd.val, what)
	}
}

func (p *parser) toolRefs(n *yaml.Node, what string, isSwarm bool) []*commandTool {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "%s: tools: want a list of tool names, got %s", what, describe(n))
		return nil
	}
	var out []*commandTool
	seen := map[string]int{}
	for _, e := range n.Content {
		e = deref(e)
		if e.Kind != yaml.ScalarNode || isNull(e) {
			p.errf(e, "%s: tools: want a tool name, got %s", what, describe(e))
			continue
		}
		name := e.Value
		if line, dup := seen[name]; dup {
			p.errf(e, "%s: tool %q is listed twice (first at line %d)", what, name, line)
			continue
		}
		seen[name] = e.Line
		td, ok := p.tools[name]
		switch {
		case !ok:
			p.errf(e, "%s: unknown tool %q (%s)", what, name, known(p.toolNames, "tools"))
		case isSwarm && slices.Contains(builtinTools, name):
			p.errf(e, "%s: tool %q has the name of a built-in tool of swarms (%s)", what, name, strings.Join(builtinTools, ", "))
		case td.tool != nil:
			out = append(out, td.tool)
		}
	}
	return out
}

func (p *parser) handoffs(n *yaml.Node, what string) []handoffRef {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "%s: handoffs: want a list of agent names, got %s", what, describe(n))
		return nil
	}
	var out []handoffRef
	seen := map[string]int{}
	for _, e := range n.Content {
		e = deref(e)
		var h handoffRef
		at := e
		switch {
		case e.Kind == yaml.ScalarNode && !isNull(e):
			h.target = e.Value
			_, h.swarm = p.swarmLines[h.target]
		case e.Kind == yaml.MappingNode:
			fs := p.fields(e, what+": handoff", handoffFields)
			fa, isAgent := fs["agent"]
			fsw, isSwarm := fs["swarm"]
			switch {
			case isAgent && isSwarm:
				p.errf(e, "%s: handoff: give either agent or swarm, not both", what)
				continue
			case isAgent:
				h.target = p.str(fa.val, what+": handoff", "agent")
				at = fa.val
			case isSwarm:
				h.target = p.str(fsw.val, what+": handoff", "swarm")
				h.swarm = true
				at = fsw.val
			default:
				p.errf(e, "%s: handoff: missing field \"agent\" or \"swarm\"", what)
				continue
			}
			if fd, ok := fs["description"]; ok {
				h.description = p.str(fd.val, what+": handoff", "description")
			}
			if fd, ok := fs["customizable"]; ok {
				h.customizable = p.boolean(fd.val, what+": handoff", "customizable")
				if !h.swarm {
					p.errf(fd.key, "%s: handoff: customizable applies to swarm handoffs only", what)
				}
			}
		default:
			p.errf(e, "%s: handoffs: want an agent or swarm name, or a mapping with agent or swarm, got %s", what, describe(e))
			continue
		}
		if h.target == "" {
			continue // reported
		}
		if line, dup := seen[h.target]; dup {
			p.errf(at, "%s: handoff to %q is listed twice (first at line %d)", what, h.target, line)
			continue
		}
		seen[h.target] = at.Line
		if declared, ok := p.remoteRef(h.target); declared && !h.swarm {
			if ok {
				h.remote = true
				out = append(out, h)
			}
			continue
		}
		if line, ok := p.convLines[h.target]; ok && p.swarmLines[h.target] == 0 && p.agentLines[h.target] == 0 {
			p.errf(at, "%s: handoff to %q, the conversation defined at line %d: a conversation cannot be a handoff target (it answers a user, message after message, and never returns a result; talk to it with swarm chat %s)", what, h.target, line, h.target)
			continue
		}
		if h.swarm {
			if _, ok := p.swarmLines[h.target]; !ok {
				p.errf(at, "%s: handoff to unknown swarm %q (%s)", what, h.target, known(p.swarmNames, "swarms"))
				continue
			}
		} else if _, ok := p.agentLines[h.target]; !ok {
			p.errf(at, "%s: handoff to unknown agent %q (%s)", what, h.target, known(p.agentNames, "agents"))
			continue
		}
		out = append(out, h)
	}
	return out
}

// sectionLines returns the names a section of top defines and their
// lines, reporting nothing: the section's own parse reports its mistakes.
func sectionLines(top map[string]field, section string) map[string]int {
	out := map[string]int{}
	fd, ok := top[section]
	if !ok || isNull(fd.val) || fd.val.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(fd.val.Content); i += 2 {
		if k := deref(fd.val.Content[i]); k.Kind == yaml.ScalarNode && out[k.Value] == 0 {
			out[k.Value] = k.Line
		}
	}
	return out
}

// known lists the names defined in a section for an error message.
func known(names []string, section string) string {
	if len(names) == 0 {
		return "no " + section + " are defined in this file"
	}
	return "known: " + strings.Join(names, ", ")
}

// input returns the schema of a structured input, nil for text.
func (p *parser) input(fd field, what string) json.RawMessage {
	n := fd.val
	switch {
	case isNull(n):
		return nil
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		if n.Value != "text" {
			p.errf(n, "%s: input: want \"text\" or a JSON schema, got %s", what, describe(n))
		}
		return nil
	}
	data, _, _ := p.schema(fd.key, n, what+": input")
	return data
}

// modelSpec checks a model spec and makes the path of a scripted model
// absolute.
func (p *parser) modelSpec(n *yaml.Node, what string) string {
	spec := p.str(n, what, "")
	if spec == "" {
		return ""
	}
	provider, name, ok := strings.Cut(spec, ":")
	if !ok || provider == "" {
		p.errf(n, "%s: %q is not a model spec: want provider:model, such as \"openai:gpt-4.1-mini\" or \"scripted:script.yaml\"", what, spec)
		return ""
	}
	if provider == "scripted" && name == "" {
		p.errf(n, "%s: %q needs a script path, such as \"scripted:script.yaml\"", what, spec)
		return ""
	}
	return p.scriptedAbs(spec)
}

// scriptedAbs makes the script path of a "scripted:PATH" spec absolute,
// relative to the file's directory; other specs are returned as they are.
// Model specs and the keys of prices: go through it alike, so that a price
// finds the model it names.
func (p *parser) scriptedAbs(spec string) string {
	if name, ok := strings.CutPrefix(spec, "scripted:"); ok && name != "" && !filepath.IsAbs(name) {
		return "scripted:" + filepath.Join(p.dir, name)
	}
	return spec
}

// str returns the text of a scalar ("" for null).
func (p *parser) str(n *yaml.Node, what, name string) string {
	n = deref(n)
	if isNull(n) {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		if name != "" {
			what += ": " + name
		}
		p.errf(n, "%s: want a string, got %s", what, describe(n))
		return ""
	}
	return n.Value
}

func (p *parser) strList(n *yaml.Node, what, name string) []string {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "%s: %s: want a list of strings, got %s", what, name, describe(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, e := range n.Content {
		e = deref(e)
		if e.Kind != yaml.ScalarNode || isNull(e) {
			p.errf(e, "%s: %s: want a string, got %s", what, name, describe(e))
			continue
		}
		out = append(out, e.Value)
	}
	return out
}

func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// tool reads a command tool definition.
func (p *parser) tool(e entry) *toolDef {
	td, _ := p.commandDef(e, "tool", toolFields)
	return td
}

// commandDef reads the command definition e of a section of kind (a tool
// or a guardrail) with the given fields, and returns the fields too.
func (p *parser) commandDef(e entry, kind string, known []string) (*toolDef, map[string]field) {
	td := &toolDef{name: e.name}
	what := kind + " " + e.name
	nameOK := p.checkName(e.key, kind, e.name, maxName)
	if nameOK && strings.HasPrefix(e.name, handoffPrefix) {
		p.errf(e.key, "%s %q: names starting with %q are reserved for handoffs", kind, e.name, handoffPrefix)
		nameOK = false
	}
	before := len(p.errs)
	fs := p.fields(e.val, what, known)
	t := &commandTool{name: e.name, dir: p.dir, timeout: defaultTimeout}
	if fd, ok := fs["description"]; ok {
		t.description = p.str(fd.val, what, "description")
	}

	if fd, has := fs["command"]; !has {
		p.errf(e.key, "%s: missing command (a list such as [\"./tool.sh\", \"--flag\"])", what)
	} else {
		t.argv = p.command(fd.val, what)
	}

	t.schema, t.resolved = defaultSchema, defaultResolved
	if fd, has := fs["input_schema"]; has && !isNull(fd.val) {
		v := fd.val
		if data, rs, sok := p.schema(fd.key, v, what+": input_schema"); sok {
			if rs.Schema().Type != "object" {
				p.errf(v, "%s: input_schema: type must be \"object\" (tool arguments are a JSON object)", what)
			} else {
				t.schema, t.resolved = data, rs
			}
		}
	}

	if fd, has := fs["timeout"]; has && !isNull(fd.val) {
		v := fd.val
		s := p.str(v, what, "timeout")
		d, err := time.ParseDuration(s)
		switch {
		case s == "":
		case err != nil:
			p.errf(v, "%s: invalid timeout %q: want a duration such as 10s or 2m", what, s)
		case d <= 0:
			p.errf(v, "%s: invalid timeout %q: must be positive", what, s)
		default:
			t.timeout = d
		}
	}

	if fd, has := fs["dir"]; has && !isNull(fd.val) {
		d := p.str(fd.val, what, "dir")
		if d != "" {
			if !filepath.IsAbs(d) {
				d = filepath.Join(p.dir, d)
			}
			if st, err := os.Stat(d); err != nil {
				p.errf(fd.val, "%s: dir: %w", what, err)
			} else if !st.IsDir() {
				p.errf(fd.val, "%s: dir: %s is not a directory", what, d)
			}
			t.dir = d
		}
	}

	if fd, has := fs["env"]; has && !isNull(fd.val) {
		t.env = p.env(fd.val, what)
	}

	if t.argv != nil {
		if path, err := p.resolveCommand(t.argv[0]); err != nil {
			p.errf(fs["command"].val, "%s: command %q: %w", what, t.argv[0], err)
		} else {
			t.path = path
		}
	}
	if nameOK && len(p.errs) == before {
		td.tool = t
	}
	return td, fs
}

func (p *parser) command(n *yaml.Node, what string) []string {
	switch {
	case n.Kind == yaml.ScalarNode && !isNull(n):
		p.errf(n, "%s: command must be a list of arguments (argv), not a string: write [%q] or split the arguments; no shell is involved", what, n.Value)
		return nil
	case n.Kind != yaml.SequenceNode:
		p.errf(n, "%s: command: want a list of arguments, got %s", what, describe(n))
		return nil
	case len(n.Content) == 0:
		p.errf(n, "%s: command is empty", what)
		return nil
	}
	argv := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		e = deref(e)
		if e.Kind != yaml.ScalarNode || isNull(e) {
			p.errf(e, "%s: command: argument %d: want a string, got %s", what, i, describe(e))
			return nil
		}
		if strings.ContainsRune(e.Value, 0) {
			p.errf(e, "%s: command: argument %d contains a NUL byte", what, i)
			return nil
		}
		argv = append(argv, e.Value)
	}
	if argv[0] == "" {
		p.errf(n, "%s: command: the program name is empty", what)
		return nil
	}
	return argv
}

// resolveCommand returns the path of the program of a command: a name with
// a slash is a path (relative to the file's directory), any other name is
// looked up in PATH.
func (p *parser) resolveCommand(name string) (string, error) {
	if strings.ContainsRune(name, '/') || strings.ContainsRune(name, filepath.Separator) {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(p.dir, path)
		}
		if _, err := exec.LookPath(path); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			} else if ee := (*exec.Error)(nil); errors.As(err, &ee) {
				err = ee.Err
			}
			return "", fmt.Errorf("%w (looked for %s)", err, path)
		}
		return path, nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("not found in PATH: %w", exec.ErrNotFound)
		}
		return "", err
	}
	if !filepath.IsAbs(path) {
		if path, err = filepath.Abs(path); err != nil {
			return "", err
		}
	}
	return path, nil
}

func (p *parser) env(n *yaml.Node, what string) []string {
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: env: want a mapping from variable name to value, got %s", what, describe(n))
		return nil
	}
	var out []string
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		name := k.Value
		switch {
		case k.Kind != yaml.ScalarNode || isNull(k) || name == "" || strings.ContainsAny(name, "=\x00"):
			p.errf(k, "%s: env: invalid variable name %s", what, describe(k))
			continue
		case slices.Contains(reservedEnv, name):
			p.errf(k, "%s: env: %s is set by the runtime", what, name)
			continue
		}
		if line, dup := seen[name]; dup {
			p.errf(k, "%s: env: %s is given twice (first at line %d)", what, name, line)
			continue
		}
		seen[name] = k.Line
		val := p.str(v, what, "env: "+name)
		if strings.ContainsRune(val, 0) {
			p.errf(v, "%s: env: the value of %s contains a NUL byte", what, name)
			continue
		}
		out = append(out, name+"="+val)
	}
	return out
}

// limits reads the limits: section.
func (p *parser) limits(n *yaml.Node) Limits {
	var l Limits
	fs := p.fields(n, "limits", limitFields)
	for _, lim := range []struct {
		name string
		v    *int64
	}{{"model_calls", &l.ModelCalls}, {"tool_calls", &l.ToolCalls}} {
		name, v := lim.name, lim.v
		fd, ok := fs[name]
		if !ok || isNull(fd.val) {
			continue
		}
		if fd.val.Kind != yaml.ScalarNode || fd.val.ShortTag() != "!!int" || fd.val.Decode(v) != nil || *v == 0 {
			p.errf(fd.val, "limits: %s: want a positive number, or -1 for no limit, got %s", name, describe(fd.val))
			*v = 0
		}
	}
	return l
}
