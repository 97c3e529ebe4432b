package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm/internal/yamljson"
	"github.com/swarmrt/swarm/model"
)

// Load reads the YAML script file at path (see [Parse] for its format) and
// returns a model answering from it.
func Load(path string, opts ...Option) (*Model, error) {
	if path == "" {
		return nil, errors.New("scripted: empty script path")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: reading script: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("scripted: script %s: %w", path, err)
	}
	m := New(s, opts...)
	m.source = path
	return m, nil
}

// ParseError is a mistake in a script file.
type ParseError struct {
	// Line is the 1-based line of the mistake.
	Line int
	// Msg describes the mistake.
	Msg string
}

// Error returns "line N: Msg".
func (e *ParseError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Parse decodes a YAML script. The file is a mapping from agent (or swarm)
// id to the list of its steps, answered in order. A step is a mapping with
// these fields, of which text, tool_calls or error must be present:
//
//	text: "..."              # the answer's text (may be combined with tool_calls)
//	tool_calls:              # a non-empty list of tool calls
//	  - id: call_1           # optional; default call_<agent>_<step>_<i>
//	    name: search         # required
//	    arguments: {q: go}   # any YAML value, converted to JSON; a plain string
//	                         # is used verbatim as the JSON text; absent means {}
//	usage: {input_tokens: 120, output_tokens: 9, cached_input_tokens: 0, reasoning_tokens: 0}
//	delay: 150ms             # a Go duration, waited before answering
//	response_id: resp_1      # the response's id, as a provider gives it
//	model: gpt-4o-2024-08-06 # the model that answered, as a provider names it
//	error: rate_limited      # fail with this model.Kind instead of answering
//	expect_parts:            # parts the request must hold (see Step.ExpectParts)
//	  - {type: image, media_type: image/png, name: chart.png, min_bytes: 1}
//
// Mistakes, such as an unknown field or error kind, an invalid delay or a map
// key in arguments that is not a string, are reported as a [*ParseError]
// giving the line.
func Parse(data []byte) (Script, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("script is empty")
		}
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &ParseError{Line: extra.Line, Msg: "a script holds a single YAML document"}
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, errors.New("script is empty")
		}
		root = root.Content[0]
	}
	root = deref(root)
	if root.Kind != yaml.MappingNode {
		return nil, perr(root, "want a mapping from agent id to a list of steps, got %s", describe(root))
	}
	if len(root.Content) == 0 {
		return nil, perr(root, "script is empty: it has no agents")
	}
	script := make(Script, len(root.Content)/2)
	lines := make(map[string]int, len(root.Content)/2)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := deref(root.Content[i]), deref(root.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" || k.Value == "" {
			return nil, perr(k, "want an agent id, got %s", describe(k))
		}
		name := k.Value
		if line, dup := lines[name]; dup {
			return nil, perr(k, "agent %q is already defined at line %d", name, line)
		}
		lines[name] = k.Line
		if v.Kind != yaml.SequenceNode {
			return nil, perr(v, "agent %q: want a list of steps, got %s", name, describe(v))
		}
		steps := make([]Step, len(v.Content))
		for j, n := range v.Content {
			s, err := parseStep(deref(n))
			if err != nil {
				var pe *ParseError
				if errors.As(err, &pe) {
					pe.Msg = fmt.Sprintf("agent %q step %d: %s", name, j, pe.Msg)
				}
				return nil, err
			}
			steps[j] = s
		}
		script[name] = steps
	}
	return script, nil
}

func parseStep(n *yaml.Node) (Step, error) {
	var s Step
	if n.Kind != yaml.MappingNode {
		return s, perr(n, "want a mapping with text, tool_calls or error, got %s", describe(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if seen[k.Value] {
			return s, perr(k, "field %q is given twice", k.Value)
		}
		seen[k.Value] = true
		var err error
		switch k.Value {
		case "text":
			s.Text, err = scalar(v, "text")
		case "tool_calls":
			s.ToolCalls, err = parseToolCalls(v)
		case "usage":
			err = parseUsage(v, &s)
		case "delay":
			s.Delay, err = parseDelay(v)
		case "response_id":
			s.ResponseID, err = scalar(v, "response_id")
		case "model":
			s.Model, err = scalar(v, "model")
		case "expect_parts":
			s.ExpectParts, err = parseExpectParts(v)
		case "error":
			s.Error, err = scalar(v, "error")
			if err == nil {
				_, err = checkKind(s.Error)
				if err != nil {
					err = perr(v, "%v", err)
				}
			}
		default:
			err = perr(k, "unknown field %q (want text, tool_calls, usage, delay, response_id, model, expect_parts or error)", k.Value)
		}
		if err != nil {
			return s, err
		}
	}
	switch {
	case !seen["text"] && !seen["tool_calls"] && !seen["error"]:
		return s, perr(n, "a step needs text, tool_calls or error")
	case seen["error"] && (seen["text"] || seen["tool_calls"]):
		return s, perr(n, "an error step cannot also have text or tool_calls")
	}
	return s, nil
}

func parseToolCalls(n *yaml.Node) ([]ToolCall, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, perr(n, "tool_calls: want a list, got %s", describe(n))
	}
	if len(n.Content) == 0 {
		return nil, perr(n, "tool_calls is empty")
	}
	calls := make([]ToolCall, len(n.Content))
	for i, c := range n.Content {
		c = deref(c)
		if c.Kind != yaml.MappingNode {
			return nil, perr(c, "tool call %d: want a mapping with name and arguments, got %s", i, describe(c))
		}
		seen := map[string]bool{}
		for j := 0; j+1 < len(c.Content); j += 2 {
			k, v := deref(c.Content[j]), deref(c.Content[j+1])
			if seen[k.Value] {
				return nil, perr(k, "tool call %d: field %q is given twice", i, k.Value)
			}
			seen[k.Value] = true
			var err error
			switch k.Value {
			case "id":
				calls[i].ID, err = scalar(v, "id")
			case "name":
				calls[i].Name, err = scalar(v, "name")
			case "arguments":
				var args json.RawMessage
				args, err = argumentsJSON(v)
				calls[i].Arguments = args
			default:
				err = perr(k, "tool call %d: unknown field %q (want id, name or arguments)", i, k.Value)
			}
			if err != nil {
				return nil, err
			}
		}
		if calls[i].Name == "" {
			return nil, perr(c, "tool call %d has no name", i)
		}
	}
	return calls, nil
}

func parseExpectParts(n *yaml.Node) ([]ExpectPart, error) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, perr(n, "expect_parts: want a non-empty list, got %s", describe(n))
	}
	out := make([]ExpectPart, len(n.Content))
	for i, c := range n.Content {
		c = deref(c)
		if c.Kind != yaml.MappingNode {
			return nil, perr(c, "expect_parts %d: want a mapping, got %s", i, describe(c))
		}
		for j := 0; j+1 < len(c.Content); j += 2 {
			k, v := deref(c.Content[j]), deref(c.Content[j+1])
			var err error
			switch k.Value {
			case "type":
				var t string
				t, err = scalar(v, "type")
				out[i].Type = model.PartType(t)
				if err == nil && !slices.Contains([]model.PartType{model.PartText, model.PartImage, model.PartFile, model.PartAudio}, out[i].Type) {
					err = perr(v, "expect_parts %d: unknown type %q (want text, image, file or audio)", i, t)
				}
			case "media_type":
				out[i].MediaType, err = scalar(v, "media_type")
			case "name":
				out[i].Name, err = scalar(v, "name")
			case "min_bytes":
				if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&out[i].MinBytes) != nil || out[i].MinBytes < 0 {
					err = perr(v, "expect_parts %d: min_bytes: want a non-negative integer, got %s", i, describe(v))
				}
			default:
				err = perr(k, "expect_parts %d: unknown field %q (want type, media_type, name or min_bytes)", i, k.Value)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func parseUsage(n *yaml.Node, s *Step) error {
	if n.Kind != yaml.MappingNode {
		return perr(n, "usage: want a mapping, got %s", describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		var p *int64
		switch k.Value {
		case "input_tokens":
			p = &s.Usage.InputTokens
		case "output_tokens":
			p = &s.Usage.OutputTokens
		case "cached_input_tokens":
			p = &s.Usage.CachedInputTokens
		case "reasoning_tokens":
			p = &s.Usage.ReasoningTokens
		default:
			return perr(k, "usage: unknown field %q (want input_tokens, output_tokens, cached_input_tokens or reasoning_tokens)", k.Value)
		}
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(p) != nil || *p < 0 {
			return perr(v, "usage: %s: want a non-negative integer, got %s", k.Value, describe(v))
		}
	}
	return nil
}

func parseDelay(n *yaml.Node) (time.Duration, error) {
	v, err := scalar(n, "delay")
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, perr(n, "invalid delay %q: want a duration such as 150ms or 2s", v)
	}
	if d < 0 {
		return 0, perr(n, "invalid delay %q: negative", v)
	}
	return d, nil
}

// scalar returns the text of a non-null scalar.
func scalar(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", perr(n, "%s: want a string, got %s", field, describe(n))
	}
	return n.Value, nil
}

// argumentsJSON converts tool call arguments to JSON: a string is used
// verbatim, null means {}, and any other value is converted, keeping the
// order of mapping keys.
func argumentsJSON(n *yaml.Node) (json.RawMessage, error) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!str":
			return json.RawMessage(n.Value), nil
		case "!!null":
			return json.RawMessage("{}"), nil
		}
	}
	out, at, err := yamljson.Convert(n, yamljson.Limits{Depth: maxDepth})
	if err != nil {
		return nil, perr(at, "arguments: %v", err)
	}
	return out, nil
}

// maxDepth bounds the nesting of arguments (and of aliases within them).
const maxDepth = 100

func deref(n *yaml.Node) *yaml.Node { return yamljson.Deref(n) }

func perr(n *yaml.Node, format string, args ...any) *ParseError {
	return &ParseError{Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

func describe(n *yaml.Node) string { return yamljson.Describe(n) }
