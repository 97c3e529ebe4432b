package config

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/model/scripted"
)

// referencePath is the swarm.yaml reference, checked by the tests below.
const referencePath = "../docs/swarm-yaml.md"

// refBlock is a ```yaml block of the reference.
type refBlock struct {
	line    int    // line of the opening fence
	section string // the nearest heading above it
	kind    string // "file" (unmarked), "script", "fragment" or "error"
	want    string // for "error": text the parse error must contain
	text    string
}

// checkMarker is the comment that marks the block right below it:
// <!-- check: script -->, <!-- check: fragment --> or
// <!-- check: error "text the error contains" -->.
var checkMarker = regexp.MustCompile(`^<!-- check: (script|fragment|error "([^"]+)") -->$`)

// referenceBlocks returns the reference's ```yaml blocks and its sections'
// text by heading. A marker that is malformed or not right above a yaml
// block fails the test, so that no block is skipped by mistake.
func referenceBlocks(t *testing.T) ([]refBlock, map[string]string) {
	t.Helper()
	f, err := os.Open(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks   []refBlock
		sections = map[string]string{}
		section  string
		cur      *refBlock
		marker   string
		want     string
		markLine int
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if cur != nil {
			if line == "```" {
				blocks = append(blocks, *cur)
				cur = nil
			} else {
				cur.text += line + "\n"
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			section = strings.TrimSpace(strings.TrimLeft(line, "#"))
			continue
		}
		sections[section] += line + "\n"
		if strings.HasPrefix(line, "<!-- check:") {
			m := checkMarker.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%s:%d: malformed marker %q", referencePath, n, line)
			}
			marker, want, markLine = strings.Fields(m[1])[0], m[2], n
			continue
		}
		if marker != "" && line != "```yaml" {
			t.Fatalf("%s:%d: the marker is not right above a ```yaml block", referencePath, markLine)
		}
		if line == "```yaml" {
			kind := marker
			if kind == "" {
				kind = "file"
			}
			cur = &refBlock{line: n, section: section, kind: kind, want: want}
			marker, want = "", ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: the block is not closed", referencePath, cur.line)
	}
	return blocks, sections
}

var (
	toolPaths = regexp.MustCompile(`\./tools/[A-Za-z0-9_.-]+`)
	tokenEnvs = regexp.MustCompile(`(?m)(?:token_env|client_secret_env): *([A-Za-z_][A-Za-z0-9_]*)`)
	cardKeys  = regexp.MustCompile(`(?m)card_keys: *(\S+)`)
)

// parseBlock parses a swarm.yaml block of the reference in a directory of
// its own, where each program ./tools/NAME it names exists, each variable
// a token_env or client_secret_env names is set, each card_keys file holds
// a public key and SWARM_SECRET_KEY is set, as the reference says they
// must be.
func parseBlock(t *testing.T, b refBlock) (*File, string, error) {
	t.Helper()
	dir := t.TempDir()
	for _, path := range toolPaths.FindAllString(b.text, -1) {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("#!/bin/sh\ncat\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range tokenEnvs.FindAllStringSubmatch(b.text, -1) {
		t.Setenv(m[1], "a-secret")
	}
	for _, m := range cardKeys.FindAllStringSubmatch(b.text, -1) {
		full := filepath.Join(dir, m[1])
		_, _, pub := testKey(t)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, pub, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SWARM_SECRET_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	f, err := Parse([]byte(b.text), dir)
	return f, dir, err
}

// TestReference parses every example of the swarm.yaml reference: a whole
// file with Parse, a script with the scripted model's parser, and a block
// marked as an error must fail to parse with its message.
func TestReference(t *testing.T) {
	blocks, _ := referenceBlocks(t)
	counts := map[string]int{}
	for _, b := range blocks {
		counts[b.kind]++
		t.Run(b.section+"/line "+strconv.Itoa(b.line), func(t *testing.T) {
			switch b.kind {
			case "fragment":
			case "script":
				if _, err := scripted.Parse([]byte(b.text)); err != nil {
					t.Errorf("%s:%d: script: %v", referencePath, b.line, err)
				}
			case "error":
				if _, _, err := parseBlock(t, b); err == nil || !strings.Contains(err.Error(), b.want) {
					t.Errorf("%s:%d: parse error %v, want one containing %q", referencePath, b.line, err, b.want)
				}
			default:
				f, _, err := parseBlock(t, b)
				if err != nil {
					t.Fatalf("%s:%d: %v", referencePath, b.line, err)
				}
				if f.Network() != nil {
					f.Network().Close()
				}
			}
		})
	}
	if counts["file"] < 15 || counts["script"] == 0 || counts["error"] == 0 {
		t.Errorf("blocks by kind %v: the reference lost its examples", counts)
	}
}

// TestReferenceKeys checks that the reference documents every key the
// parser accepts, each as a row of a table in the section of its mapping.
func TestReferenceKeys(t *testing.T) {
	_, sections := referenceBlocks(t)
	for section, lists := range map[string][][]string{
		"The file":                         {topFields},
		"limits":                           {limitFields},
		"models and prices":                {modelFields, priceFields},
		"tools":                            {toolFields},
		"agents":                           {agentFields},
		"handoffs":                         {handoffFields},
		"skills":                           {skillFields},
		"compaction":                       {compactionFields},
		"memory":                           {memoryFields},
		"knowledge":                        {knowledgeFields, knowledgeEntryFields},
		"swarms":                           {swarmFields},
		"loop":                             {loopFields},
		"conversations":                    {conversationFields},
		"handovers":                        {handoverFields},
		"teams":                            {teamFields},
		"members":                          {memberFields},
		"workflows":                        {workflowFields},
		"nodes":                            {nodeFields},
		"edges":                            {edgeFields, whenFields},
		"guardrails":                       {guardrailFields},
		"mcp_servers":                      {mcpFields, clientOAuthFields},
		"a2a_agents":                       {a2aFields},
		"serve":                            {serveFields, serveTokenFields, oauthFields},
		"network, share and network_tools": {networkFields, shareFields, networkToolsFields},
		"temporal":                         {temporalFields, temporalTLSFields},
	} {
		text, ok := sections[section]
		if !ok {
			t.Errorf("%s: no section %q", referencePath, section)
			continue
		}
		for _, list := range lists {
			for _, key := range list {
				if !strings.Contains(text, "| `"+key+"` |") {
					t.Errorf("%s: section %q has no row for the key %s", referencePath, section, key)
				}
			}
		}
	}
}

// WriteWalkthrough writes the swarm.yaml and script.yaml blocks of a
// section of the reference (the first of each kind) to a new directory and
// returns the path of its swarm.yaml. (Exported for the tests of package
// config_test, which run them.)
func WriteWalkthrough(t *testing.T, section string) string {
	t.Helper()
	blocks, _ := referenceBlocks(t)
	dir := t.TempDir()
	names := map[string]string{"file": "swarm.yaml", "script": "script.yaml"}
	for _, b := range blocks {
		name := names[b.kind]
		if b.section != section || name == "" {
			continue
		}
		delete(names, b.kind)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(names) != 0 {
		t.Fatalf("%s: section %q lacks a block for %v", referencePath, section, names)
	}
	return filepath.Join(dir, "swarm.yaml")
}
