package guardrail_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/guardrail"
)

func allow(context.Context, guardrail.Check) (guardrail.Verdict, error) {
	return guardrail.Verdict{Action: guardrail.Allow}, nil
}

// Validate refuses each kind of bad definition with a message naming what
// is wrong, and accepts a guardrail on every point.
func TestValidate(t *testing.T) {
	all := []guardrail.Point{guardrail.Input, guardrail.Output, guardrail.ToolCall, guardrail.ToolResult, guardrail.Handoff, guardrail.HandoffResult}
	for _, tc := range []struct {
		g    guardrail.Guardrail
		want string // "" when valid
	}{
		{guardrail.Guardrail{Name: "ok_1-a", Points: all, Check: allow}, ""},
		{guardrail.Guardrail{Points: all, Check: allow}, "empty name"},
		{guardrail.Guardrail{Name: strings.Repeat("n", 65), Points: all, Check: allow}, "longer than 64"},
		{guardrail.Guardrail{Name: "a/b", Points: all, Check: allow}, "only letters"},
		{guardrail.Guardrail{Name: "g", Points: all}, "no Check function"},
		{guardrail.Guardrail{Name: "g", Check: allow}, "checks no point"},
		{guardrail.Guardrail{Name: "g", Points: []guardrail.Point{guardrail.Input, "sideways"}, Check: allow}, `unknown point "sideways"`},
	} {
		err := tc.g.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.g.Name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one saying %q", tc.g.Name, err, tc.want)
		}
	}
}

// A check and a verdict are the JSON a command guardrail reads and writes,
// and their points and actions are journaled: their encoding is fixed.
func TestWireFormat(t *testing.T) {
	c := guardrail.Check{Point: guardrail.HandoffResult, RunID: "r", Agent: "a", Target: "t", IsError: true}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"point":"handoff_result","run_id":"r","agent":"a","target":"t","is_error":true}`; string(b) != want {
		t.Errorf("check %s, want %s", b, want)
	}
	var v guardrail.Verdict
	if err := json.Unmarshal([]byte(`{"verdict":"tripwire","message":"m"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v != (guardrail.Verdict{Action: guardrail.Tripwire, Message: "m"}) {
		t.Errorf("verdict %+v", v)
	}
	for p, want := range map[guardrail.Point]string{guardrail.Input: "input", guardrail.Output: "output", guardrail.ToolCall: "tool_call",
		guardrail.ToolResult: "tool_result", guardrail.Handoff: "handoff", guardrail.HandoffResult: "handoff_result"} {
		if string(p) != want || !p.Valid() {
			t.Errorf("point %q (valid %v), want %q", p, p.Valid(), want)
		}
	}
	for a, want := range map[guardrail.Action]string{guardrail.Allow: "allow", guardrail.Reject: "reject", guardrail.Tripwire: "tripwire", guardrail.Pause: "pause"} {
		if string(a) != want {
			t.Errorf("action %q, want %q", a, want)
		}
	}
}

// Decide fails closed: a check's error, panic or unknown action trips,
// saying why; an empty action allows; the four actions pass as they are.
func TestDecide(t *testing.T) {
	decide := func(check func(context.Context, guardrail.Check) (guardrail.Verdict, error)) guardrail.Verdict {
		g := guardrail.Guardrail{Name: "g", Points: []guardrail.Point{guardrail.Output}, Check: check}
		return g.Decide(context.Background(), guardrail.Check{Point: guardrail.Output})
	}
	verdict := func(v guardrail.Verdict, err error) func(context.Context, guardrail.Check) (guardrail.Verdict, error) {
		return func(context.Context, guardrail.Check) (guardrail.Verdict, error) { return v, err }
	}
	for _, tc := range []struct {
		name  string
		check func(context.Context, guardrail.Check) (guardrail.Verdict, error)
		want  guardrail.Action
		msg   string // the start of the message
	}{
		{"error", verdict(guardrail.Verdict{Action: guardrail.Allow}, errors.New("down")), guardrail.Tripwire, "check failed: down"},
		{"panic", func(context.Context, guardrail.Check) (guardrail.Verdict, error) { panic("boom") }, guardrail.Tripwire, "check panicked: boom\n"},
		{"unknown", verdict(guardrail.Verdict{Action: "maybe"}, nil), guardrail.Tripwire, `unknown verdict "maybe"`},
		{"empty", verdict(guardrail.Verdict{}, nil), guardrail.Allow, ""},
		{"reject", verdict(guardrail.Verdict{Action: guardrail.Reject, Message: "no"}, nil), guardrail.Reject, "no"},
		{"pause", verdict(guardrail.Verdict{Action: guardrail.Pause, Message: "ask"}, nil), guardrail.Pause, "ask"},
	} {
		v := decide(tc.check)
		if v.Action != tc.want || !strings.HasPrefix(v.Message, tc.msg) || (tc.msg == "" && v.Message != "") {
			t.Errorf("%s: verdict %+v, want %s with a message starting %q", tc.name, v, tc.want, tc.msg)
		}
	}
}
