package swarm

import (
	"encoding/json"
	"fmt"
)

// Recorded returns the value [Driver.Record] journaled under key on an
// earlier drive of the run, and whether there is one; a journaled error
// returns as a [*Failure]. It runs nothing and journals nothing.
//
// A strategy uses it to learn a decision it recorded before a crash or a
// pause (the winner of a race, a timeout) before deciding what to start:
// replaying a race's losers or a timed-out step would start work that the
// recorded decision already stopped. It sees the journal as it was when
// the drive began: a value recorded during this drive is not reported.
func (d *Driver) Recorded(key string) (json.RawMessage, bool, error) {
	ev, ok, err := d.RecordedEvent(key)
	if !ok || err != nil {
		return nil, false, err
	}
	if ev.Type != EventRecorded {
		return nil, false, fmt.Errorf("%w: step %s holds a %s, not a recorded value", ErrInvalid, key, ev.Type)
	}
	if ev.IsError {
		return nil, true, &Failure{Reason: ev.Output}
	}
	return ev.Result, true, nil
}
