package swarm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/partjson"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
)

// Spec is the configuration of one run of a swarm, computed from its input.
type Spec struct {
	// Instructions is the orchestrator's system prompt (a text/template
	// rendered against the run's values; the input is {{.Input}}).
	Instructions string
	// Handoffs are the agents the orchestrator may delegate to.
	Handoffs []Handoff
	// Tools are the orchestrator's own tools.
	Tools []Tool
	// MaxTurns bounds the orchestrator's rounds (DefaultMaxTurns when zero).
	MaxTurns int
	// Model optionally overrides the runtime's default model spec.
	Model string
	// Hooks observe the orchestrator.
	Hooks Hooks
	// Registry, when set, gives the orchestrator the registry tools (see
	// [RegistryAccess]).
	Registry *RegistryAccess
	// Strategy, when set, drives the run instead of the tool-calling loop:
	// a strategy of package strategy, given as strategy.Of(s). Package
	// adaptive has one with ledgers, stall detection and replanning;
	// package workflow makes them of typed steps.
	Strategy seam.Strategy
	// NoBuiltins offers the orchestrator none of the built-in tools
	// complete, pause and fail, which otherwise go out with every
	// orchestrator call: the run completes when the orchestrator answers
	// with a valid result (text, or JSON for a typed result), and can
	// neither pause for a human nor give up. complete is offered only to
	// swarms whose result is not text either way: a text answer already
	// completes those.
	NoBuiltins bool
	// Guardrails check every agent of the run (see [guardrail.Guardrail]).
	Guardrails []guardrail.Guardrail
	// HoldStream holds streamed model text back from subscribers until
	// the output guardrails have allowed the response; text of a rejected
	// or tripped response never reaches them.
	HoldStream bool
	// Compaction keeps every agent's history within its model's context
	// window (nil: off; an Agent's own setting wins).
	Compaction *compact.Config
}

// Swarm is a typed swarm definition: In is the input type and Out the result
// type. Define one with [Define] and register it with [Runtime.Register].
//
// Out determines how a run ends successfully: its JSON schema is the
// argument of the built-in complete tool, and a plain text answer that
// parses as JSON conforming to it completes the run too. When Out is string,
// any plain text answer completes the run.
type Swarm[In, Out any] struct {
	id, description string
	spec            func(In) Spec
	tags            []string
	customizable    bool

	textIn, textOut bool
	inSchema        json.RawMessage
	inResolved      *jsonschema.Resolved
	outSchema       json.RawMessage
	outResolved     *jsonschema.Resolved
	err             error
	// noTarget, when set, says why no handoff may target the swarm.
	noTarget string
}

// Definition is a registered swarm of any type. Only *Swarm values
// implement it.
type Definition interface {
	// ID is the swarm's unique id.
	ID() string
	// Description says what the swarm does.
	Description() string
	// InputSchema is the JSON schema of the input.
	InputSchema() json.RawMessage
	// ResultSchema is the JSON schema of the result.
	ResultSchema() json.RawMessage

	def() *defInfo
}

// defInfo is the untyped view of a swarm used by the engine.
type defInfo struct {
	id, description string
	textIn, textOut bool
	customizable    bool
	err             error
	// noTarget, when set, says why no handoff may target the definition
	// (see Swarm.RefuseHandoffs).
	noTarget string
	// spec decodes a JSON input and computes the run's spec.
	spec func(input json.RawMessage) (Spec, error)
	// output validates a result and returns it as JSON.
	output func(raw json.RawMessage) (json.RawMessage, error)
	// outSchema is the result schema.
	outSchema json.RawMessage
	inSchema  json.RawMessage
	// agentRun is set for a definition of agent runs (driver_define.go,
	// made by strategy.DefineAgentRuns): it plans each run.
	agentRun func(input json.RawMessage, values map[string]any) (seam.AgentRun, error)
	// inParts and outParts: the input or result type can hold a
	// model.Part (parts_json.go).
	inParts, outParts bool
}

// Define makes a swarm definition. spec computes the run's configuration
// from its input, so instructions, handoffs, tools and max turns can depend
// on what the swarm is asked (nil spec means an empty one).
func Define[In, Out any](id, description string, spec func(in In) Spec) *Swarm[In, Out] {
	s := &Swarm[In, Out]{id: id, description: description, spec: spec}
	s.textIn = reflect.TypeFor[In]().Kind() == reflect.String
	s.textOut = reflect.TypeFor[Out]().Kind() == reflect.String
	if err := checkName(id); err != nil {
		s.err = fmt.Errorf("swarm %q: %w", id, err)
	}
	in, err := schemaFor[In]()
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("swarm %s: input type: %w", id, err)
	}
	if err == nil {
		s.setInputSchema(in)
	}
	out, err := schemaFor[Out]()
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("swarm %s: result type: %w", id, err)
	}
	if err == nil {
		s.setResultSchema(out)
	}
	return s
}

func schemaFor[T any]() (json.RawMessage, error) {
	if reflect.TypeFor[T]() == reflect.TypeFor[json.RawMessage]() {
		return json.RawMessage(`{}`), nil
	}
	sc, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{partjson.PartType: partjson.Schema()}})
	if err != nil {
		return nil, err
	}
	return json.Marshal(sc)
}

func (s *Swarm[In, Out]) setResultSchema(schema json.RawMessage) {
	rs, err := resolveSchema(schema)
	if err != nil {
		s.err = fmt.Errorf("swarm %s: result schema: %w", s.id, err)
		return
	}
	s.outSchema, s.outResolved = schema, rs
}

func (s *Swarm[In, Out]) setInputSchema(schema json.RawMessage) {
	rs, err := resolveSchema(schema)
	if err != nil {
		s.err = fmt.Errorf("swarm %s: input schema: %w", s.id, err)
		return
	}
	s.inSchema, s.inResolved = schema, rs
}

func resolveSchema(schema json.RawMessage) (*jsonschema.Resolved, error) {
	var sc jsonschema.Schema
	if err := json.Unmarshal(schema, &sc); err != nil {
		return nil, err
	}
	return sc.Resolve(nil)
}

// WithInputSchema replaces the input schema derived from In. It is meant for
// In = json.RawMessage, where the schema comes from configuration. Inputs
// are validated against it before a run starts.
func (s *Swarm[In, Out]) WithInputSchema(schema json.RawMessage) *Swarm[In, Out] {
	s.setInputSchema(schema)
	return s
}

// WithResultSchema replaces the result schema derived from Out. It is meant
// for Out = json.RawMessage, where the schema comes from configuration.
func (s *Swarm[In, Out]) WithResultSchema(schema json.RawMessage) *Swarm[In, Out] {
	s.setResultSchema(schema)
	return s
}

// Invalid marks the definition invalid with err (unless a mistake was
// found already, or err is nil): registering it reports the error. A
// package that builds a kind of run on a Swarm (a conversation) reports
// with it the mistakes it finds in its own configuration.
func (s *Swarm[In, Out]) Invalid(err error) *Swarm[In, Out] {
	if s.err == nil {
		s.err = err
	}
	return s
}

// RefuseHandoffs marks the definition as one no handoff may target (nor a
// delegation or a workflow node, which are handoffs): a run whose plan
// hands off to it is refused when it starts, with ErrInvalid and reason,
// which says why and what to do instead. A package that builds a kind of
// run on a Swarm that never returns a result to a caller (a conversation
// answers a user, message after message) marks its definitions with it.
func (s *Swarm[In, Out]) RefuseHandoffs(reason string) *Swarm[In, Out] {
	s.noTarget = reason
	return s
}

// WithTags attaches tags that describe the swarm in listings.
func (s *Swarm[In, Out]) WithTags(tags ...string) *Swarm[In, Out] {
	s.tags = append(s.tags, tags...)
	return s
}

// WithError returns s made invalid: registering it fails with err
// (wrapped in [ErrInvalid]), unless s was invalid already. It is how a
// constructor of swarms (such as absorb.Captain) reports a definition that
// could never run.
func (s *Swarm[In, Out]) WithError(err error) *Swarm[In, Out] {
	if s.err == nil {
		s.err = err
	}
	return s
}

// ID returns the swarm's id.
func (s *Swarm[In, Out]) ID() string { return s.id }

// Description returns the swarm's description.
func (s *Swarm[In, Out]) Description() string { return s.description }

// Tags returns the swarm's tags.
func (s *Swarm[In, Out]) Tags() []string { return s.tags }

// InputSchema returns the JSON schema of In.
func (s *Swarm[In, Out]) InputSchema() json.RawMessage { return s.inSchema }

// ResultSchema returns the JSON schema of the result.
func (s *Swarm[In, Out]) ResultSchema() json.RawMessage { return s.outSchema }

func (s *Swarm[In, Out]) def() *defInfo {
	return &defInfo{
		id: s.id, description: s.description,
		textIn: s.textIn, textOut: s.textOut, err: s.err, customizable: s.customizable, noTarget: s.noTarget,
		inSchema: s.inSchema, outSchema: s.outSchema,
		inParts: partjson.Has(reflect.TypeFor[In]()), outParts: partjson.Has(reflect.TypeFor[Out]()),
		spec: func(raw json.RawMessage) (Spec, error) {
			// A text input needs no schema check: decoding it into a
			// string is the check, once null (which decodes into any
			// string) is refused.
			if s.textIn && (len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null") {
				return Spec{}, fmt.Errorf("%w: swarm %s: input is missing; it takes a string", ErrInvalidInput, s.id)
			}
			if s.inResolved != nil && !s.textIn {
				if err := validateJSON(s.inResolved, raw); err != nil {
					return Spec{}, fmt.Errorf("%w: swarm %s: input does not match its schema: %w", ErrInvalidInput, s.id, err)
				}
			}
			var in In
			if err := json.Unmarshal(raw, &in); err != nil {
				return Spec{}, fmt.Errorf("%w: swarm %s: decode input: %w", ErrInvalidInput, s.id, err)
			}
			if s.spec == nil {
				return Spec{}, nil
			}
			return s.spec(in), nil
		},
		output: s.checkOutput,
	}
}

// checkOutput validates a result against the result schema and Out and
// returns its canonical JSON.
func (s *Swarm[In, Out]) checkOutput(raw json.RawMessage) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("result is not valid JSON: %w", err)
	}
	if s.outResolved != nil {
		if err := s.outResolved.Validate(v); err != nil {
			return nil, fmt.Errorf("result does not match the result schema: %w", err)
		}
	}
	var out Out
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("result does not match the result type: %w", err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("result is not valid JSON: %w", err)
	}
	return b.Bytes(), nil
}

// textToResult turns a plain text answer into a result when it conforms: any
// text for a text result, otherwise JSON (optionally fenced in ```).
func (d *defInfo) textToResult(text string) (json.RawMessage, error) {
	if d.textOut {
		return json.Marshal(text)
	}
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") {
		t = strings.TrimPrefix(t, "```")
		t = strings.TrimPrefix(t, "json")
		t = strings.TrimSuffix(strings.TrimSpace(t), "```")
		t = strings.TrimSpace(t)
	}
	return d.output(json.RawMessage(t))
}

// inputText is the first user message of a run: a text input as is, any
// other input as JSON.
func (d *defInfo) inputText(raw json.RawMessage) string {
	if d.textIn {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// checkName is the rule of names (see model.CheckName).
var checkName = model.CheckName
