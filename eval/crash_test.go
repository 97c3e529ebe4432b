package eval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
)

// desk is a conversation under test: its agent looks an order up, then
// answers.
func desk() swarm.Definition {
	return conversation.Define("desk", "A help desk", conversation.Spec[struct{}]{
		Queen: &swarm.Agent{Name: "clerk", Instructions: "Help the customer.", Tools: []swarm.Tool{lookupOrder()}},
	})
}

// deskSet has a conversation case and a simulated user's, each scored
// by a judge.
func deskSet() *eval.Set {
	return &eval.Set{Name: "desk", Swarm: "desk", Judge: "judge", Simulator: "user-sim", Parallel: 2, Cases: []eval.Case{
		{ID: "talk", Turns: []string{"where is order 7?", "thanks"}, Expect: eval.Expect{Scorers: []string{"polite"}}},
		{ID: "sim", Scenario: &eval.Scenario{Goal: "learn where order 9 is", First: "hi, order 9?", MaxTurns: 3}, Expect: eval.Expect{Scorers: []string{"polite"}}},
	}}
}

// deskScript serves every run the same answers, whichever case asks
// first: the clerk looks the order up and answers each message, the
// judge says yes, the simulated user thanks once, then is done.
func deskScript() scripted.Script {
	return scripted.Script{
		"clerk": {
			scripted.Tools(scripted.CallTool("lookup_order", map[string]any{"id": "7"})),
			scripted.Text("It has shipped."),
			scripted.Text("You're welcome."),
		},
		"judge":    {scripted.Text("yes"), scripted.Text("yes")},
		"user-sim": {scripted.Text("thanks!"), scripted.Text("GOAL MET")},
	}
}

// withoutClock is a report without what no replay repeats: its times.
func withoutClock(raw json.RawMessage) json.RawMessage {
	var r eval.Report
	if json.Unmarshal(raw, &r) != nil {
		return raw
	}
	r.Started, r.Ended = time.Time{}, time.Time{}
	for i := range r.Cases {
		r.Cases[i].Observed.Duration = 0
	}
	out, _ := json.Marshal(r)
	return out
}

// An eval run killed at every journal append, on memory, SQLite and
// PostgreSQL, recovers to the same report (but for its times), and no
// model response journaled before the crash, the cases' nor the judges'
// nor the simulated user's, is asked for again (the kit counts the
// scripted model's calls per run, agent and call).
func TestCrashAtEveryAppend(t *testing.T) {
	in, err := json.Marshal(eval.Input{Set: deskSet(), Config: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{desk(), eval.Definition(eval.Options{Scorers: map[string]eval.Scorer{"polite": judgeScorer{}}})},
		Agents:      []*swarm.Agent{{Name: "judge", Instructions: "Judge."}, {Name: "user-sim", Instructions: "Play the user."}},
		Swarm:       eval.SwarmID,
		Input:       in,
		Script:      deskScript(),
		Result:      withoutClock,
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			rep, err := eval.Wait(context.Background(), rt, id)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Passed != 2 || len(rep.Cases) != 2 {
				t.Fatalf("passed %d of %d cases, want 2 of 2: %+v", rep.Passed, len(rep.Cases), rep.Cases)
			}
			talk, sim := rep.Cases[0].Observed, rep.Cases[1].Observed
			if got := transcript(talk.Transcript); got != "user: where is order 7? | assistant: It has shipped. | user: thanks | assistant: You're welcome." {
				t.Errorf("talk's transcript: %s", got)
			}
			if got := transcript(sim.Transcript); got != "user: hi, order 9? | assistant: It has shipped. | user: thanks! | assistant: You're welcome." {
				t.Errorf("sim's transcript: %s", got)
			}
			if len(talk.Calls) != 1 || talk.Calls[0].Name != "lookup_order" {
				t.Errorf("talk's calls: %+v", talk.Calls)
			}
		},
	})
}

func transcript(msgs []model.Message) string {
	var parts []string
	for _, m := range msgs {
		parts = append(parts, string(m.Role)+": "+m.Content)
	}
	return strings.Join(parts, " | ")
}
