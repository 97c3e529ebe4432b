// Package yamljson converts YAML values to JSON and describes YAML nodes in
// error messages. The configuration loader and the scripted model's script
// format share it, so both accept the same YAML and report it the same way.
package yamljson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxDepth is the default bound on the nesting of YAML values (and of
// aliases within them).
const MaxDepth = 64

// Limits bound a conversion.
type Limits struct {
	// Depth bounds nesting (and alias chains).
	Depth int
	// Nodes bounds the nodes converted, so that aliases cannot expand a
	// small file into a huge document; 0 means no bound.
	Nodes int
}

// Convert converts a YAML value to JSON, keeping the order of mapping keys.
// Mapping keys must be strings. On failure it also returns the node the
// error is about.
func Convert(n *yaml.Node, lim Limits) (json.RawMessage, *yaml.Node, error) {
	c := &conv{lim: lim}
	if err := c.write(n, 0); err != nil {
		return nil, c.at, err
	}
	return c.buf.Bytes(), nil, nil
}

type conv struct {
	lim   Limits
	buf   bytes.Buffer
	nodes int
	at    *yaml.Node
}

func (c *conv) fail(n *yaml.Node, format string, args ...any) error {
	c.at = n
	return fmt.Errorf(format, args...)
}

func (c *conv) write(n *yaml.Node, depth int) error {
	c.nodes++
	if c.lim.Nodes > 0 && c.nodes > c.lim.Nodes {
		return c.fail(n, "value is too large (more than %d nodes after expanding aliases)", c.lim.Nodes)
	}
	if depth > c.lim.Depth {
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
			k := Deref(n.Content[i])
			switch {
			case k.ShortTag() == "!!merge":
				return c.fail(k, "merge keys (<<) are not supported")
			case k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str":
				return c.fail(k, "map key %s is not a string (quote it)", Describe(k))
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

// Deref follows an alias to the node it names.
func Deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < MaxDepth; i++ {
		n = n.Alias
	}
	return n
}

// Describe names a node for error messages.
func Describe(n *yaml.Node) string {
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
			return fmt.Sprintf("the string %q", Truncate(n.Value))
		case "!!int", "!!float":
			return "the number " + Truncate(n.Value)
		case "!!bool":
			return "the boolean " + n.Value
		}
		return fmt.Sprintf("%s %q", n.ShortTag(), Truncate(n.Value))
	case yaml.AliasNode:
		return "an alias"
	}
	return "an unsupported YAML value"
}

// Truncate shortens s to at most 40 bytes for an error message, cutting at
// a character boundary.
func Truncate(s string) string {
	if len(s) <= 40 {
		return s
	}
	i := 37
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}
