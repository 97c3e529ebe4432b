package adaptive

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/swarmrt/swarm"
)

// The events an adaptive run journals besides the engine's.
const (
	// EventLedger is an adaptive run's task ledger, made at the start, at
	// each replan and after each plan review: Ledger (a [TaskLedger]),
	// Turn (the round).
	EventLedger swarm.EventType = "ledger"
	// EventProgress is an adaptive run's judgement of a round: Progress
	// (a [ProgressLedger], with the stall counter), Turn (the round).
	EventProgress swarm.EventType = "progress"
)

// TaskLedger is an adaptive run's outer-loop state (event "ledger"): what
// is known and the plan. A new one is recorded at the start, at each replan
// and after each human plan review.
type TaskLedger struct {
	// Facts are the facts given in the task, to look up, and derived.
	Facts Facts `json:"facts"`
	// Plan is the steps, in order.
	Plan []string `json:"plan"`
	// Number counts the ledgers of the run: 0 for the first.
	Number int `json:"number"`
	// Cause is why the ledger was made: "start", "stall" (a replan) or
	// "review" (a human answered a plan review).
	Cause string `json:"cause"`
	// Feedback is the human's answer a "review" ledger took in.
	Feedback string `json:"feedback,omitempty"`
	// Changes is what changed in the plan from the previous ledger: removed
	// steps prefixed "- ", added ones "+ ".
	Changes []string `json:"changes,omitempty"`
	// Fallback is set when the model gave no valid ledger and the previous
	// one was kept (or a minimal one made).
	Fallback bool `json:"fallback,omitempty"`
}

// Facts is a task ledger's fact sheet.
type Facts struct {
	Given    []string `json:"given,omitempty"`
	ToLookUp []string `json:"to_look_up,omitempty"`
	Derived  []string `json:"derived,omitempty"`
}

// ProgressLedger is an adaptive run's judgement of one round (event
// "progress"): whether the request is satisfied, whether the run loops or
// makes progress, who acts next with which instruction, and the stall
// counter after this round.
type ProgressLedger struct {
	Round       int    `json:"round"`
	Satisfied   bool   `json:"is_request_satisfied"`
	InLoop      bool   `json:"is_in_loop"`
	Progress    bool   `json:"is_progress_being_made"`
	NextHandoff string `json:"next_handoff,omitempty"`
	Instruction string `json:"instruction,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// Signals are the deterministic stall signals of the last round:
	// "repeat" (the same handoff with the same instruction as a round of
	// the window before it) and "no_new_info" (an answer the window had
	// already seen).
	Signals []string `json:"signals,omitempty"`
	// Stalls is the stall counter after this round: +1 when no progress
	// was made or the run is in a loop, -1 (not below 0) otherwise.
	Stalls int `json:"stalls"`
	// Evaluator is the agent that judged progress, when not the
	// orchestrator.
	Evaluator string `json:"evaluator,omitempty"`
	// Fallback is set when the model gave no valid ledger: the round
	// counts as a stall and the next agent is picked in turn.
	Fallback bool `json:"fallback,omitempty"`
	// Replan is set when the stall counter reached the threshold: the
	// round replans (or escalates) instead of handing off.
	Replan bool `json:"replan,omitempty"`
}

// LedgerOf returns the task ledger of ev, an [EventLedger] event; ok is
// false for any other event.
func LedgerOf(ev swarm.Event) (l TaskLedger, ok bool) {
	if ev.Type != EventLedger || len(ev.Ledger) == 0 {
		return l, false
	}
	return l, json.Unmarshal(ev.Ledger, &l) == nil
}

// ProgressOf returns the progress ledger of ev, an [EventProgress] event;
// ok is false for any other event.
func ProgressOf(ev swarm.Event) (p ProgressLedger, ok bool) {
	if ev.Type != EventProgress || len(ev.Progress) == 0 {
		return p, false
	}
	return p, json.Unmarshal(ev.Progress, &p) == nil
}

// text is the ledger as prompts and plan reviews show it.
func (l TaskLedger) text() string {
	var b strings.Builder
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		b.WriteString(title + ":\n")
		for _, s := range items {
			b.WriteString("- " + s + "\n")
		}
	}
	list("Facts given", l.Facts.Given)
	list("Facts to look up", l.Facts.ToLookUp)
	list("Facts derived", l.Facts.Derived)
	b.WriteString("Plan:\n")
	for i, s := range l.Plan {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	return b.String()
}
