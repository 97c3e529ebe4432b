package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm/internal/yamljson"
)

// toJSON converts a YAML value to JSON, keeping the order of mapping keys.
// maxNodes bounds the nodes converted per value, so that aliases cannot
// expand a small file into a huge document.
func toJSON(n *yaml.Node) (json.RawMessage, *yaml.Node, error) {
	return yamljson.Convert(n, yamljson.Limits{Depth: maxDepth, Nodes: maxNodes})
}

const maxNodes = 100_000

// maxDepth bounds the nesting of YAML values checked here.
const maxDepth = yamljson.MaxDepth

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

func deref(n *yaml.Node) *yaml.Node { return yamljson.Deref(n) }

func describe(n *yaml.Node) string { return yamljson.Describe(n) }

func truncate(s string) string { return yamljson.Truncate(s) }
