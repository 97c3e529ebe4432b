package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// maxDepth bounds the nesting of YAML values (and of aliases within them).
const maxDepth = 64

// maxNodes bounds the number of nodes converted to JSON per value, so that
// aliases cannot expand a small file into a huge document.
const maxNodes = 100_000

// toJSON converts a YAML value to JSON, keeping the order of mapping keys.
// Mapping keys must be strings.
func toJSON(n *yaml.Node) (json.RawMessage, *yaml.Node, error) {
	c := &jsonConv{}
	if err := c.write(n, 0); err != nil {
		return nil, c.at, err
	}
	return c.buf.Bytes(), nil, nil
}

type jsonConv struct {
	buf   bytes.Buffer
	nodes int
	at    *yaml.Node // the node an error is about
}

func (c *jsonConv) fail(n *yaml.Node, format string, args ...any) error {
	c.at = n
	return fmt.Errorf(format, args...)
}

func (c *jsonConv) write(n *yaml.Node, depth int) error {
	c.nodes++
	if c.nodes > maxNodes {
		return c.fail(n, "value is too large (more than %d nodes after expanding aliases)", maxNodes)
	}
	if depth > maxDepth {
		return c.fail(n, "value is nested too deeply")
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return c.fail(n, "unknown alias")
		}
		return c.write(n.Alias, depth+1)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			c.buf.WriteString("null")
			return nil
		}
		return c.write(n.Content[0], depth)
	case yaml.SequenceNode:
		c.buf.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				c.buf.WriteByte(',')
			}
			if err := c.write(e, depth+1); err != nil {
				return err
			}
		}
		c.buf.WriteByte(']')
		return nil
	case yaml.MappingNode:
		c.buf.WriteByte('{')
		seen := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			switch {
			case k.ShortTag() == "!!merge":
				return c.fail(k, "merge keys (<<) are not supported")
			case k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str":
				return c.fail(k, "mapping key %s is not a string (quote it)", describe(k))
			}
			if line, dup := seen[k.Value]; dup {
				return c.fail(k, "key %q is given twice (first at line %d)", k.Value, line)
			}
			seen[k.Value] = k.Line
			if i > 0 {
				c.buf.WriteByte(',')
			}
			writeString(&c.buf, k.Value)
			c.buf.WriteByte(':')
			if err := c.write(n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		c.buf.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			c.buf.WriteString("null")
			return nil
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return c.fail(n, "%v", err)
			}
			b, err := json.Marshal(v)
			if err != nil {
				return c.fail(n, "%s cannot be represented in JSON", n.Value)
			}
			c.buf.Write(b)
			return nil
		}
		writeString(&c.buf, n.Value)
		return nil
	}
	return c.fail(n, "unsupported YAML value")
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Truncate(buf.Len() - 1)
}

// schemaKeywords are the keywords jsonschema-go understands.
var schemaKeywords = func() map[string]bool {
	kw := map[string]bool{"type": true, "items": true, "dependencies": true}
	t := reflect.TypeFor[jsonschema.Schema]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			kw[name] = true
		}
	}
	return kw
}()

// How a keyword's value contains subschemas.
const (
	subOne     = iota + 1 // a schema
	subList               // a list of schemas
	subMap                // a mapping of schemas
	subItems              // a schema or a list of schemas
	subDepends            // a mapping of schemas or lists of property names
)

var subschemas = map[string]int{
	"properties": subMap, "patternProperties": subMap, "$defs": subMap, "definitions": subMap, "dependentSchemas": subMap,
	"dependencies": subDepends,
	"items":        subItems,
	"prefixItems":  subList, "allOf": subList, "anyOf": subList, "oneOf": subList,
	"additionalProperties": subOne, "additionalItems": subOne, "contains": subOne, "unevaluatedItems": subOne,
	"propertyNames": subOne, "unevaluatedProperties": subOne, "not": subOne, "if": subOne, "then": subOne,
	"else": subOne, "contentSchema": subOne,
}

var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// checkSchema reports the mistakes jsonschema-go would silently accept in a
// schema written in YAML: unknown keywords (a typo such as "requried" would
// disable a constraint) and unknown type names. Keywords starting with "x-"
// are extensions and allowed.
func (p *parser) checkSchema(n *yaml.Node, what string, depth int) {
	n = deref(n)
	if depth > maxDepth {
		p.errf(n, "%s: schema is nested too deeply", what)
		return
	}
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool":
		return
	case n.Kind != yaml.MappingNode:
		p.errf(n, "%s: a JSON schema must be a mapping or a boolean, got %s", what, describe(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			continue // reported by toJSON
		}
		kw := k.Value
		if !schemaKeywords[kw] && !strings.HasPrefix(kw, "x-") {
			p.errf(k, "%s: unknown JSON schema keyword %q%s", what, kw, suggest(kw, keys(schemaKeywords)))
			continue
		}
		if kw == "type" {
			p.checkType(v, what)
			continue
		}
		switch subschemas[kw] {
		case subOne:
			p.checkSchema(v, what, depth+1)
		case subList:
			p.checkSchemaList(v, what, kw, depth)
		case subItems:
			if v.Kind == yaml.SequenceNode {
				p.checkSchemaList(v, what, kw, depth)
			} else {
				p.checkSchema(v, what, depth+1)
			}
		case subMap, subDepends:
			if v.Kind != yaml.MappingNode {
				p.errf(v, "%s: %s: want a mapping, got %s", what, kw, describe(v))
				continue
			}
			for j := 1; j < len(v.Content); j += 2 {
				s := deref(v.Content[j])
				if subschemas[kw] == subDepends && s.Kind == yaml.SequenceNode {
					continue
				}
				p.checkSchema(s, what, depth+1)
			}
		}
	}
}

func (p *parser) checkSchemaList(v *yaml.Node, what, kw string, depth int) {
	if v.Kind != yaml.SequenceNode {
		p.errf(v, "%s: %s: want a list of schemas, got %s", what, kw, describe(v))
		return
	}
	for _, s := range v.Content {
		p.checkSchema(s, what, depth+1)
	}
}

func (p *parser) checkType(v *yaml.Node, what string) {
	check := func(t *yaml.Node) {
		t = deref(t)
		switch {
		case t.Kind == yaml.ScalarNode && t.ShortTag() == "!!str":
			if !slices.Contains(jsonTypes, t.Value) {
				hint := suggest(t.Value, jsonTypes)
				if hint == "" {
					hint = " (want one of " + strings.Join(jsonTypes, ", ") + ")"
				}
				p.errf(t, "%s: unknown JSON schema type %q%s", what, t.Value, hint)
			}
		default:
			p.errf(t, "%s: type: want a type name or a list of them, got %s", what, describe(t))
		}
	}
	if v.Kind == yaml.SequenceNode {
		for _, t := range v.Content {
			check(t)
		}
		return
	}
	check(v)
}

// schema checks a JSON schema written in YAML (the value n of the field
// key) and returns it as JSON with its resolved form. ok is false after a
// reported mistake.
func (p *parser) schema(key, n *yaml.Node, what string) (json.RawMessage, *jsonschema.Resolved, bool) {
	// Conversion first: it bounds the size of the value, aliases expanded,
	// and so the work of checkSchema.
	data, at, err := toJSON(n)
	if err != nil {
		p.errf(at, "%s: %w", what, err)
		return nil, nil, false
	}
	before := len(p.errs)
	p.checkSchema(n, what, 0)
	if len(p.errs) > before {
		return nil, nil, false
	}
	rs, err := resolveSchema(data)
	if err != nil {
		p.errf(key, "%s: invalid JSON schema: %w", what, err)
		return nil, nil, false
	}
	return data, rs, true
}

func resolveSchema(data json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// te.Field is a Go path such as ".schemaWithoutMethods.required".
			kw := te.Field[strings.LastIndexByte(te.Field, '.')+1:]
			return nil, &msgError{msg: fmt.Sprintf("%s: got a JSON %s, want %s", kw, te.Value, te.Type), err: err}
		}
		return nil, err
	}
	return s.Resolve(nil)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// suggest returns ` (did you mean "x"?)` for the candidate closest to s, if
// one is close enough, and "" otherwise.
func suggest(s string, candidates []string) string {
	best, bestD := "", 3
	ls := strings.ToLower(s)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := distance(ls, lc)
		if d >= bestD && len(ls) >= 4 && (strings.HasPrefix(lc, ls) || strings.HasPrefix(ls, lc)) {
			d = bestD - 1 // a prefix: "desc" for "description"
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance between a and b (in bytes).
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

// describe names a node for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing (null)"
		case "!!str":
			return fmt.Sprintf("the string %q", truncate(n.Value))
		case "!!int", "!!float":
			return "the number " + truncate(n.Value)
		case "!!bool":
			return "the boolean " + n.Value
		}
		return fmt.Sprintf("%s %q", n.ShortTag(), truncate(n.Value))
	case yaml.AliasNode:
		return "an alias"
	}
	return "an unsupported YAML value"
}

func truncate(s string) string {
	if len(s) <= 40 {
		return s
	}
	i := 37
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}
