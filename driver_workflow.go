package swarm

import (
	"encoding/json"
	"fmt"

	"github.com/swarmrt/swarm/internal/seam"
)

// Recorded implements strategy.Driver.Recorded.
func (d *seamDriver) Recorded(key string) (json.RawMessage, bool, error) {
	ev, ok, err := d.RecordedEvent(key)
	if !ok || err != nil {
		return nil, false, err
	}
	if ev.Type != EventRecorded {
		return nil, false, fmt.Errorf("%w: step %s holds a %s, not a recorded value", ErrInvalid, key, ev.Type)
	}
	if ev.IsError {
		return nil, true, seam.NewFailure(ev.Output, false)
	}
	return ev.Result, true, nil
}
