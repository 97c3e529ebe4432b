package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm/internal/yamljson"
)

// Error is a mistake in an eval set file, located by line, as the
// configuration loader reports its own (package config).
//
// Parse and Load return a single *Error, or several joined with
// [errors.Join], in line order; [errors.As] finds the first.
type Error struct {
	// File is the name given to Parse or the path given to Load ("" for
	// none).
	File string
	// Line is the 1-based line of the mistake; 0 when it has none (an
	// empty file).
	Line int
	// Err describes the mistake.
	Err error
}

// Error returns "FILE:LINE: message" ("line LINE: message" without a file
// name).
func (e *Error) Error() string {
	var p string
	switch {
	case e.File != "" && e.Line > 0:
		p = e.File + ":" + strconv.Itoa(e.Line)
	case e.File != "":
		p = e.File
	case e.Line > 0:
		p = "line " + strconv.Itoa(e.Line)
	default:
		return e.Err.Error()
	}
	return p + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// The bounds of a set as Parse reads it.
const (
	// MaxFileBytes bounds an eval set file.
	MaxFileBytes = 64 << 20
	// MaxCases bounds the cases of a set.
	MaxCases = 100_000
	// MaxIDLen bounds a case's ID.
	MaxIDLen = 100
	// MaxScenarioTurns bounds a scenario's MaxTurns.
	MaxScenarioTurns = 50
	// DefaultScenarioTurns is a scenario's MaxTurns when it sets none.
	DefaultScenarioTurns = 5
)

// Load reads an eval set from the YAML or JSON file at path (JSON is
// read as YAML, its subset). Mistakes name the file and the line (see
// [Error]).
func Load(path string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval set: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("eval set %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, &Error{File: path, Err: fmt.Errorf("file is larger than %d bytes", MaxFileBytes)}
	}
	return Parse(data, path)
}

// Parse reads an eval set from data, YAML or JSON; name names it in
// errors ("" for none) and, without a name: field, names the set (its
// base name without extension). Every mistake found is returned, each
// with its line: syntax, unknown fields, values of the wrong type, case
// IDs missing or used twice, cases without an input, and expectations
// that cannot be checked (a bad regular expression or schema, an unknown
// match kind, a threshold out of range).
func Parse(data []byte, name string) (*Set, error) {
	p := &loader{file: name}
	s := p.parse(data)
	if err := p.err(); err != nil {
		return nil, err
	}
	if s.Name == "" && name != "" {
		s.Name = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	return s, nil
}

// loader collects the mistakes of one file.
type loader struct {
	file  string
	errs  []*Error
	lines map[string]int // JSON path ("cases.0.expect") -> line of its value
	// durations maps each duration's text to its line: a duration's
	// decoding error does not say where it is.
	durations map[string]int
}

func (p *loader) errf(line int, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Err: fmt.Errorf(format, args...)})
}

func (p *loader) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(p.errs, func(a, b *Error) int { return a.Line - b.Line })
	if len(p.errs) == 1 {
		return p.errs[0]
	}
	errs := make([]error, len(p.errs))
	for i, e := range p.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// yamlLine finds the line in yaml.v3's error messages.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

func (p *loader) parse(data []byte) *Set {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.errf(0, "file is empty (it needs at least swarm: and cases:)")
			return nil
		}
		msg, line := err.Error(), 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = msg[len(m[0]):]
		}
		p.errf(line, "%s", strings.TrimPrefix(msg, "yaml: "))
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.errf(extra.Line, "a file holds a single YAML document")
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	root = yamljson.Deref(root)
	if root.Kind != yaml.MappingNode {
		p.errf(root.Line, "want a mapping with swarm: and cases:, got %s", yamljson.Describe(root))
		return nil
	}
	p.lines = map[string]int{}
	p.check(root, reflect.TypeFor[Set](), "", root.Line, 0)
	if len(p.errs) > 0 {
		return nil
	}
	raw, at, err := yamljson.Convert(root, yamljson.Limits{Depth: yamljson.MaxDepth, Nodes: 10_000_000})
	if err != nil {
		line := 0
		if at != nil {
			line = at.Line
		}
		p.errf(line, "%v", err)
		return nil
	}
	var s Set
	jd := json.NewDecoder(bytes.NewReader(raw))
	jd.DisallowUnknownFields()
	if err := jd.Decode(&s); err != nil {
		p.jsonError(err)
		return nil
	}
	p.validate(&s)
	return &s
}

// jsonError reports a decoding error of the converted JSON at the line of
// the value it is about.
func (p *loader) jsonError(err error) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.String()
		switch te.Type.Kind() {
		case reflect.Slice:
			want = "a list"
		case reflect.Map, reflect.Struct:
			want = "a mapping"
		case reflect.String:
			want = "a string"
		case reflect.Int, reflect.Int64:
			want = "an integer"
		case reflect.Float64:
			want = "a number"
		case reflect.Bool:
			want = "a boolean"
		}
		p.errf(p.line(te.Field), "%s: want %s, got a %s", fieldName(te.Field), want, te.Value)
		return
	}
	var de *durationError
	if errors.As(err, &de) {
		p.errf(p.lineOfValue(de.value), "%v", err)
		return
	}
	p.errf(0, "%v", err)
}

// line returns the line of the value at path (its nearest known
// ancestor's when the path is not known).
func (p *loader) line(path string) int {
	for path != "" {
		if l, ok := p.lines[path]; ok {
			return l
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// lineOfValue returns the line of a duration written v (0 if none).
func (p *loader) lineOfValue(v string) int { return p.durations[v] }

// fieldName is a JSON path as a reader of the file sees it:
// "cases[0].expect.bounds.turns".
func fieldName(path string) string {
	var b strings.Builder
	for i, seg := range strings.Split(path, ".") {
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// check walks n, the YAML of a value of Go type t at path (whose key is
// on line), refusing mapping keys t has no field for and values of the
// wrong kind, and noting the line of every value.
func (p *loader) check(n *yaml.Node, t reflect.Type, path string, line, depth int) {
	n = yamljson.Deref(n)
	if depth > yamljson.MaxDepth {
		return
	}
	p.lines[path] = line
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	want := ""
	switch {
	case t == reflect.TypeFor[Duration]():
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.Value != "0") {
			want = "a duration such as \"30s\""
		} else {
			if p.durations == nil {
				p.durations = map[string]int{}
			}
			p.durations[n.Value] = n.Line
		}
	case t == reflect.TypeFor[json.RawMessage](), t.Kind() == reflect.Interface:
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			want = "a mapping"
			break
		}
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				names := make([]string, 0, len(fields))
				for name := range fields {
					names = append(names, name)
				}
				slices.Sort(names)
				p.errf(k.Line, "%s: unknown field %q (known: %s)", where(path), k.Value, strings.Join(names, ", "))
				continue
			}
			p.check(v, f, join(path, k.Value), k.Line, depth+1)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			want = "a list"
			break
		}
		for i, e := range n.Content {
			p.check(e, t.Elem(), join(path, strconv.Itoa(i)), e.Line, depth+1)
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			want = "a mapping"
			break
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			p.check(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), n.Content[i].Line, depth+1)
		}
	case t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			want = "a string (quote it)"
		}
	case t.Kind() == reflect.Int:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			want = "an integer"
		}
	case t.Kind() == reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			want = "a number"
		}
	case t.Kind() == reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			want = "true or false"
		}
	}
	if want != "" {
		p.errf(n.Line, "%s: want %s, got %s", where(path), want, yamljson.Describe(n))
	}
}

// where names a path in a message ("the set" for the root).
func where(path string) string {
	if path == "" {
		return "the set"
	}
	return fieldName(path)
}

func join(path, seg string) string {
	if path == "" {
		return seg
	}
	return path + "." + seg
}

// jsonFields maps the JSON names of t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// validate checks what the types alone do not: the set's fields, and
// every case's ID, input and expectations.
func (p *loader) validate(s *Set) {
	if strings.TrimSpace(s.Swarm) == "" {
		p.errf(p.line("swarm"), "the set needs swarm: the id of the swarm under test")
	}
	if s.Threshold < 0 || s.Threshold > 1 {
		p.errf(p.line("threshold"), "threshold must be between 0 and 1, got %g", s.Threshold)
	}
	if s.Parallel < 0 {
		p.errf(p.line("parallel"), "parallel must not be negative, got %d", s.Parallel)
	}
	if len(s.Cases) == 0 {
		p.errf(p.line("cases"), "the set has no cases")
	}
	if len(s.Cases) > MaxCases {
		p.errf(p.line("cases"), "the set has %d cases (at most %d)", len(s.Cases), MaxCases)
	}
	seen := map[string]int{}
	for i, c := range s.Cases {
		path := "cases." + strconv.Itoa(i)
		line := p.line(path)
		if err := checkCase(s, c); err != nil {
			p.errf(line, "case %s: %v", caseName(c, i), err)
		}
		if c.ID != "" {
			if first, dup := seen[c.ID]; dup {
				p.errf(p.line(path+".id"), "case %s: the ID is already used by the case at line %d", c.ID, first)
			} else {
				seen[c.ID] = p.line(path + ".id")
			}
		}
		if err := validateExpect(c); err != nil {
			p.errf(p.line(path+".expect"), "%v", err)
		}
	}
}

// caseName names case c, the i-th of its set, in a message.
func caseName(c Case, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return "#" + strconv.Itoa(i+1)
}

// Validate checks s as Parse checks a file: a set built in Go is run only
// when it would load. Its error names the cases.
func Validate(s *Set) error {
	if s == nil {
		return errors.New("eval: no set")
	}
	p := &loader{lines: map[string]int{}}
	p.validate(s)
	return p.err()
}

// checkCase checks a case's ID, its input and the agents it needs.
func checkCase(s *Set, c Case) error {
	var errs []error
	switch {
	case c.ID == "":
		errs = append(errs, errors.New("needs an id"))
	case len(c.ID) > MaxIDLen:
		errs = append(errs, fmt.Errorf("id is longer than %d characters", MaxIDLen))
	case strings.ContainsFunc(c.ID, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '/' }):
		errs = append(errs, fmt.Errorf("id %q contains spaces, control characters or '/'", c.ID))
	}
	inputs := 0
	for _, has := range []bool{c.Input != "", len(c.Turns) > 0, len(c.Mail) > 0, c.Scenario != nil} {
		if has {
			inputs++
		}
	}
	switch {
	case inputs == 0:
		errs = append(errs, errors.New("needs an input, turns, mail or a scenario"))
	case inputs > 1:
		errs = append(errs, errors.New("has more than one of input, turns, mail and scenario (give one)"))
	}
	for i, m := range slices.Concat(c.Turns, c.Mail) {
		if strings.TrimSpace(m) == "" {
			errs = append(errs, fmt.Errorf("message %d is empty", i+1))
		}
	}
	if sc := c.Scenario; sc != nil {
		if strings.TrimSpace(sc.Goal) == "" {
			errs = append(errs, errors.New("scenario needs a goal"))
		}
		if sc.MaxTurns < 0 || sc.MaxTurns > MaxScenarioTurns {
			errs = append(errs, fmt.Errorf("scenario max_turns must be between 0 and %d, got %d", MaxScenarioTurns, sc.MaxTurns))
		}
		if sc.Agent == "" && s.Simulator == "" {
			errs = append(errs, errors.New("scenario needs a simulator agent (scenario agent: or the set's simulator:)"))
		}
	}
	for _, r := range c.Expect.Rubrics {
		if r.Judge == "" && s.Judge == "" {
			errs = append(errs, fmt.Errorf("rubric %s needs a judge agent (its judge: or the set's judge:)", r.Name))
		}
	}
	return errors.Join(errs...)
}

// durationError is a duration that does not parse.
type durationError struct {
	value string
	err   error
}

func (e *durationError) Error() string {
	return fmt.Sprintf("duration %q: %v (write it as \"30s\", \"1m30s\" or \"500ms\")", e.value, e.err)
}

// MarshalJSON writes d as "30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration written as "30s" (or 0).
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "0" || string(b) == "null" {
		*d = 0
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &durationError{value: string(b), err: errors.New("not a string")}
	}
	return d.parse(s)
}

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return &durationError{value: s, err: errors.New("not a duration")}
	}
	if v < 0 {
		return &durationError{value: s, err: errors.New("negative")}
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes d as "30s".
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML reads a duration written as "30s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "0" {
		*d = 0
		return nil
	}
	return d.parse(n.Value)
}

// String is d as "30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes s as YAML, in the format Parse reads: the fields in
// the order of the types, block style, empty fields left out.
func MarshalYAML(s *Set) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	plain(&n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return b.Bytes(), nil
}

// plain drops the flow and quoting style JSON gave n's nodes, so that
// the encoder picks the block style and quotes only what needs quotes.
func plain(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && strings.Contains(n.Value, "\n") {
		n.Style = yaml.LiteralStyle
	}
	for _, c := range n.Content {
		plain(c)
	}
}
