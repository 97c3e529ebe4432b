package main

import (
	"strings"
	"testing"
)

// The example runs offline to the end: OrderReview gets the swarm's typed
// decision, and the swarm run's journal is in the Swarm store.
func TestChildWorkflow(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{`"action": "refund"`, `"SwarmRun": "order-1042-triage"`, "completed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
