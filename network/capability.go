package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/swarmrt/swarm/model"
)

// Kind is what a capability is: a tool, an agent or a swarm.
type Kind string

// The kinds of capabilities.
const (
	KindTool  Kind = "tool"
	KindAgent Kind = "agent"
	KindSwarm Kind = "swarm"
)

// Errors of the package.
var (
	// ErrInvalid: a capability, a shared item or a message is malformed.
	ErrInvalid = errors.New("invalid")
	// ErrNoProvider: no healthy provider of a capability is known.
	ErrNoProvider = errors.New("no provider")
	// ErrUnknownCapability: a node was asked for a capability it does not
	// share (or that the caller's token may not use).
	ErrUnknownCapability = errors.New("unknown capability")
	// ErrTooMany: a hello carries more capabilities than the limit.
	ErrTooMany = errors.New("too many capabilities")
	// ErrTooLarge: a peer sent a message (an event of its change feed)
	// larger than the limit, 16 MiB.
	ErrTooLarge = errors.New("message too large")
	// ErrCallTimeout: a network call got no answer within
	// Options.CallTimeout.
	ErrCallTimeout = errors.New("network call timed out")
)

// Capability is something a node shares: its name (a valid tool name,
// [a-zA-Z0-9_-]{1,64}), what it does, its kind, tags for discovery, the
// JSON schemas of its input (an object) and output, and a version. Two
// providers may share capabilities of one name with different schemas and
// versions: the registry keeps both, told apart by provider and version.
type Capability struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	Kind         Kind            `json:"kind"`
	Tags         []string        `json:"tags,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Version      string          `json:"version,omitempty"`
}

// Limits of a capability's fields.
const (
	maxName        = 64
	maxDescription = 4096
	maxTags        = 32
	maxTag         = 64
	maxVersion     = 64
	maxSchema      = 64 << 10
)

// Validate reports what is wrong with c, wrapping [ErrInvalid].
func (c Capability) Validate() error {
	if err := checkName(c.Name); err != nil {
		return fmt.Errorf("%w: capability %w", ErrInvalid, err)
	}
	switch c.Kind {
	case KindTool, KindAgent, KindSwarm:
	default:
		return fmt.Errorf("%w: capability %s: kind %q is not tool, agent or swarm", ErrInvalid, c.Name, c.Kind)
	}
	if len(c.Description) > maxDescription {
		return fmt.Errorf("%w: capability %s: description longer than %d bytes", ErrInvalid, c.Name, maxDescription)
	}
	if len(c.Tags) > maxTags {
		return fmt.Errorf("%w: capability %s: more than %d tags", ErrInvalid, c.Name, maxTags)
	}
	for _, t := range c.Tags {
		if t == "" || len(t) > maxTag || strings.ContainsAny(t, " \t\r\n,") {
			return fmt.Errorf("%w: capability %s: tag %q: want 1 to %d characters without spaces or commas", ErrInvalid, c.Name, t, maxTag)
		}
	}
	if len(c.Version) > maxVersion || strings.ContainsAny(c.Version, " \t\r\n") {
		return fmt.Errorf("%w: capability %s: version %q: want at most %d characters without spaces", ErrInvalid, c.Name, c.Version, maxVersion)
	}
	for _, s := range []struct {
		what   string
		schema json.RawMessage
	}{{"input_schema", c.InputSchema}, {"output_schema", c.OutputSchema}} {
		if len(s.schema) == 0 {
			continue
		}
		if len(s.schema) > maxSchema {
			return fmt.Errorf("%w: capability %s: %s larger than %d bytes", ErrInvalid, c.Name, s.what, maxSchema)
		}
		var m map[string]any
		if err := json.Unmarshal(s.schema, &m); err != nil {
			return fmt.Errorf("%w: capability %s: %s is not a JSON object: %v", ErrInvalid, c.Name, s.what, err)
		}
	}
	if len(c.InputSchema) > 0 {
		var m map[string]any
		_ = json.Unmarshal(c.InputSchema, &m)
		if t, ok := m["type"]; ok && t != "object" {
			return fmt.Errorf("%w: capability %s: input_schema must describe an object (tool arguments are objects)", ErrInvalid, c.Name)
		}
	}
	return nil
}

func checkName(n string) error { return model.CheckName(n) }

// HasTag reports whether c has tag.
func (c Capability) HasTag(tag string) bool { return slices.Contains(c.Tags, tag) }

func (c Capability) clone() Capability {
	c.Tags = slices.Clone(c.Tags)
	c.InputSchema = slices.Clone(c.InputSchema)
	c.OutputSchema = slices.Clone(c.OutputSchema)
	return c
}

// CompareVersions orders versions: numeric dot-separated parts compare as
// numbers ("1.10" > "1.9"), other parts as text; "" is the oldest.
func CompareVersions(a, b string) int {
	if a == b {
		return 0
	}
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, ex := strconv.Atoi(as[i])
		y, ey := strconv.Atoi(bs[i])
		var c int
		if ex == nil && ey == nil {
			c = x - y
		} else {
			c = strings.Compare(as[i], bs[i])
		}
		if c != 0 {
			if c < 0 {
				return -1
			}
			return 1
		}
	}
	return len(as) - len(bs)
}
