package swarm

import (
	"encoding/json"
	"fmt"
)

// Instructions returns the orchestrator instructions a run of the
// registered swarm id would get for input: the swarm's spec computed from
// the JSON input and its instruction template rendered with it (and no
// values). Front ends use it to show what a swarm is told without starting
// a run. An input the swarm rejects gives an error wrapping ErrInvalidInput.
func (rt *Runtime) Instructions(id string, input json.RawMessage) (string, error) {
	info, err := rt.info(id)
	if err != nil {
		return "", err
	}
	if len(input) == 0 {
		input = json.RawMessage(`null`)
	}
	spec, err := info.spec(input)
	if err != nil {
		return "", err
	}
	var in any
	_ = json.Unmarshal(input, &in)
	text, err := rt.render(spec.Instructions, map[string]any{"Input": in})
	if err != nil {
		return "", fmt.Errorf("swarm %s: instructions: %w", id, err)
	}
	return text, nil
}
