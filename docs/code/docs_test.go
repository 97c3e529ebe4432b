package code

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	icli "github.com/swarmrt/swarm/internal/cli"
	"github.com/swarmrt/swarm/server"
)

// -update rewrites the guide's Go blocks from their sources and the
// generated reference pages, instead of failing when they differ.
var update = flag.Bool("update", false, "rewrite the docs' Go blocks and generated pages")

// root is the repository, two directories up.
const root = "../.."

// pages are the Markdown files whose Go blocks must compile: the README
// and every page under docs/.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// marker names the compiled source of the Go block that follows it:
// <!-- code: PATH --> (the whole file) or <!-- code: PATH#NAME --> (the
// lines between "// snippet NAME" and "// end snippet" in PATH), PATH
// from the repository's root.
var marker = regexp.MustCompile(`^<!-- code: ([^ #]+)(?:#([\w-]+))? -->$`)

// source returns the text a marker names, without the indentation its
// lines share.
func source(path, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return "", err
	}
	text := strings.TrimRight(string(b), "\n")
	if name == "" {
		return text, nil
	}
	lines := strings.Split(text, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "// snippet "+name })
	if start < 0 {
		return "", fmt.Errorf("%s has no line \"// snippet %s\"", path, name)
	}
	end := slices.IndexFunc(lines[start+1:], func(l string) bool { return strings.TrimSpace(l) == "// end snippet" })
	if end < 0 {
		return "", fmt.Errorf("%s: snippet %s has no \"// end snippet\"", path, name)
	}
	body := lines[start+1 : start+1+end]
	indent := ""
	for i, l := range body {
		if strings.TrimSpace(l) == "" {
			continue
		}
		lead := l[:len(l)-len(strings.TrimLeft(l, "\t"))]
		if i == 0 || indent == "" || len(lead) < len(indent) {
			indent = lead
		}
	}
	for i, l := range body {
		body[i] = strings.TrimPrefix(l, indent)
	}
	return strings.Join(body, "\n"), nil
}

// Every Go block of the README and of docs/ is code that compiles: it
// sits under a marker naming a file of the module (this package's files
// hold the guide's fragments) and must equal what the marker names.
func TestGoBlocks(t *testing.T) {
	blocks := 0
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		changed := false
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```go" {
				continue
			}
			blocks++
			end := i + 1
			for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
				end++
			}
			rel, _ := filepath.Rel(root, page)
			var m []string
			if i > 0 {
				m = marker.FindStringSubmatch(strings.TrimSpace(lines[i-1]))
			}
			if m == nil {
				t.Errorf("%s:%d: a Go block without <!-- code: PATH#NAME --> on the line before it", rel, i+1)
				i = end
				continue
			}
			want, err := source(m[1], m[2])
			if err != nil {
				t.Errorf("%s:%d: %v", rel, i+1, err)
				i = end
				continue
			}
			// A block indented in a list keeps its indentation.
			ind := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
			wantLines := strings.Split(want, "\n")
			for k, l := range wantLines {
				if l != "" {
					wantLines[k] = ind + l
				}
			}
			got := strings.Join(lines[i+1:end], "\n")
			if got != strings.Join(wantLines, "\n") {
				if *update {
					lines = slices.Concat(lines[:i+1], wantLines, lines[end:])
					end = i + 1 + len(wantLines)
					changed = true
				} else {
					t.Errorf("%s:%d: the Go block differs from %s (run go test ./docs/code -run TestGoBlocks -update); want:\n%s", rel, i+1, lines[i-1], want)
				}
			}
			i = end
		}
		if changed {
			if err := os.WriteFile(page, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no Go blocks found: is the repository where this test expects it?")
	}
}

// check compares a generated page with the committed one.
func check(t *testing.T, path string, got []byte) {
	t.Helper()
	file := filepath.Join(root, path)
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s is out of date (run go test ./docs/code -run %s -update); line %d is\n%q\nand should be\n%q", path, t.Name(), i+1, w, g)
			}
		}
	}
}

// The CLI reference is what the swarm command itself writes (the hidden
// `swarm docs`), from its commands and flags.
func TestCLIReference(t *testing.T) {
	t.Setenv("SWARM_STORE", "")
	t.Setenv("SWARM_MODEL", "")
	var out, errb bytes.Buffer
	if code := icli.Main([]string{"docs"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("swarm docs: exit %d: %s", code, errb.String())
	}
	check(t, "docs/reference/cli.md", out.Bytes())
}

// The HTTP reference is written from the OpenAPI document the server
// serves.
func TestHTTPReference(t *testing.T) {
	page, err := httpReference(server.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	check(t, "docs/reference/http.md", page)
}

type openAPI struct {
	Info struct {
		Title, Description string
	}
	Paths      map[string]map[string]json.RawMessage
	Components struct {
		Parameters map[string]param
		Responses  map[string]struct{ Description string }
		Schemas    map[string]json.RawMessage
	}
}

type param struct {
	Ref         string `json:"$ref"`
	Name        string
	In          string
	Required    bool
	Description string
	Schema      struct {
		Type string
	}
}

type operation struct {
	OperationID string `json:"operationId"`
	Summary     string
	Description string
	Security    *[]any
	Parameters  []param
	RequestBody *struct {
		Content map[string]struct {
			Schema struct {
				Ref         string `json:"$ref"`
				Type        string
				Description string
			}
		}
	} `json:"requestBody"`
	Responses map[string]struct {
		Ref         string `json:"$ref"`
		Description string
	}
}

// httpReference renders an OpenAPI 3.1 document as a Markdown page: one
// section per path and method, in the document's order of paths.
func httpReference(doc []byte) ([]byte, error) {
	var api openAPI
	if err := json.Unmarshal(doc, &api); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	// Paths in the document's order: decode the keys once more.
	var order []string
	dec := json.NewDecoder(bytes.NewReader(doc))
	var raw struct {
		Paths json.RawMessage
	}
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	pd := json.NewDecoder(bytes.NewReader(raw.Paths))
	if _, err := pd.Token(); err != nil {
		return nil, err
	}
	for pd.More() {
		tok, err := pd.Token()
		if err != nil {
			return nil, err
		}
		order = append(order, tok.(string))
		var skip json.RawMessage
		if err := pd.Decode(&skip); err != nil {
			return nil, err
		}
	}
	resolve := func(p param) param {
		if p.Ref != "" {
			return api.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
		}
		return p
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", api.Info.Title)
	b.WriteString("<!-- Generated from server/openapi.json; do not edit: run\n")
	b.WriteString("     `go test ./docs/code -run TestHTTPReference -update` after changing the document. -->\n\n")
	b.WriteString(api.Info.Description + "\n\n")
	b.WriteString("`swarm serve` serves this API and its OpenAPI 3.1 document at `/openapi.json` (the schemas named below are\n")
	b.WriteString("defined there). Guides: [serving over HTTP](../serving.md), [A2A](../a2a.md), [MCP](../mcp.md).\n\n")
	b.WriteString("| Method | Path | What it does |\n|---|---|---|\n")
	methods := []string{"get", "post", "put", "patch", "delete"}
	for _, p := range order {
		for _, m := range methods {
			if raw, ok := api.Paths[p][m]; ok {
				var op operation
				_ = json.Unmarshal(raw, &op)
				fmt.Fprintf(&b, "| %s | [`%s`](#%s) | %s |\n", strings.ToUpper(m), p, opAnchor(m, op), cell(op.Summary))
			}
		}
	}
	for _, p := range order {
		var shared []param
		if raw, ok := api.Paths[p]["parameters"]; ok {
			_ = json.Unmarshal(raw, &shared)
		}
		for _, m := range methods {
			raw, ok := api.Paths[p][m]
			if !ok {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("%s %s: %w", m, p, err)
			}
			fmt.Fprintf(&b, "\n<a id=\"%s\"></a>\n## %s %s\n\n", opAnchor(m, op), strings.ToUpper(m), p)
			b.WriteString(op.Summary + ".")
			if op.Description != "" {
				b.WriteString(" " + op.Description)
			}
			b.WriteString("\n")
			if op.Security != nil && len(*op.Security) == 0 {
				b.WriteString("\nPublic: no token needed.\n")
			}
			params := append(slices.Clone(shared), op.Parameters...)
			if len(params) > 0 {
				b.WriteString("\n| Parameter | In | Type | Description |\n|---|---|---|---|\n")
				for _, q := range params {
					q = resolve(q)
					req := ""
					if q.Required {
						req = " (required)"
					}
					fmt.Fprintf(&b, "| `%s`%s | %s | %s | %s |\n", q.Name, req, q.In, q.Schema.Type, cell(q.Description))
				}
			}
			if op.RequestBody != nil {
				types := slices.Sorted(maps.Keys(op.RequestBody.Content))
				for _, ct := range types {
					s := op.RequestBody.Content[ct].Schema
					what := s.Type
					if s.Ref != "" {
						what = "`" + strings.TrimPrefix(s.Ref, "#/components/schemas/") + "`"
					}
					if s.Description != "" {
						what += ": " + s.Description
					}
					fmt.Fprintf(&b, "\nBody (%s): %s.\n", ct, strings.TrimSuffix(what, "."))
				}
			}
			codes := slices.Sorted(maps.Keys(op.Responses))
			b.WriteString("\n| Status | Meaning |\n|---|---|\n")
			for _, c := range codes {
				r := op.Responses[c]
				d := r.Description
				if r.Ref != "" {
					d = api.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")].Description
				}
				fmt.Fprintf(&b, "| %s | %s |\n", c, cell(d))
			}
		}
	}
	b.WriteString("\n## Schemas\n")
	names := slices.Sorted(maps.Keys(api.Components.Schemas))
	for _, n := range names {
		var s schema
		if err := json.Unmarshal(api.Components.Schemas[n], &s); err != nil {
			return nil, fmt.Errorf("schema %s: %w", n, err)
		}
		fmt.Fprintf(&b, "\n### %s\n\n", n)
		if s.Description != "" {
			b.WriteString(s.Description + "\n\n")
		}
		if len(s.Enum) > 0 {
			fmt.Fprintf(&b, "One of: `%s`.\n", strings.Join(s.Enum, "`, `"))
			continue
		}
		if len(s.Properties) == 0 {
			fmt.Fprintf(&b, "Type: %s.\n", cmpOr(s.Type, "any"))
			continue
		}
		props := slices.Sorted(maps.Keys(s.Properties))
		b.WriteString("| Field | Type | Description |\n|---|---|---|\n")
		for _, k := range props {
			f := s.Properties[k]
			typ := cmpOr(f.Type, "any")
			if f.Ref != "" {
				typ = strings.TrimPrefix(f.Ref, "#/components/schemas/")
			}
			if f.Items != nil && f.Items.Ref != "" {
				typ = "array of " + strings.TrimPrefix(f.Items.Ref, "#/components/schemas/")
			}
			req := ""
			if slices.Contains(s.Required, k) {
				req = " (required)"
			}
			fmt.Fprintf(&b, "| `%s`%s | %s | %s |\n", k, req, cell(typ), cell(f.Description))
		}
	}
	return []byte(b.String()), nil
}

// schema is the part of a JSON Schema the reference shows.
type schema struct {
	Type        any
	Description string
	Enum        []string
	Required    []string
	Properties  map[string]struct {
		Ref         string `json:"$ref"`
		Type        any
		Description string
		Items       *struct {
			Ref string `json:"$ref"`
		}
	}
}

func cmpOr(t any, def string) string {
	if t == nil {
		return def
	}
	return fmt.Sprint(t)
}

func opAnchor(method string, op operation) string {
	if op.OperationID != "" {
		return strings.ToLower(op.OperationID)
	}
	return method
}

// cell makes text safe in a table cell.
func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// codeSpan is inline code, where brackets are not links.
var codeSpan = regexp.MustCompile("`[^`]*`")

// link is a Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link of the README and of docs/ names a file of the
// repository, and its #fragment a heading (or an id) of that page: the
// guide was cut out of one README, and a link left pointing at a section
// that moved is easy to miss.
func TestLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		b, _ := os.ReadFile(path)
		inCode := false
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inCode = !inCode
			}
			if inCode {
				continue
			}
			if strings.HasPrefix(l, "#") {
				a[slug(strings.TrimLeft(l, "# "))] = true
			}
			for _, m := range regexp.MustCompile(`<a id="([^"]+)">`).FindAllStringSubmatch(l, -1) {
				a[m[1]] = true
			}
		}
		anchors[path] = a
		return a
	}
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		inCode := false
		for n, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inCode = !inCode
			}
			if inCode {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s:%d: %s: no such file", rel, n+1, target)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[frag] {
					t.Errorf("%s:%d: %s: no heading #%s in %s", rel, n+1, target, frag, path)
				}
			}
		}
	}
}

// slug is the anchor GitHub gives a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces as hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
