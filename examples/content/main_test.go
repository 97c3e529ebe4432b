package main

import (
	"context"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// The researcher answers each sub-topic with its own facts, whatever the
// order in which the parallel branches reach the model: every answer in
// the journal is the one for the question of its handoff.
func TestResearchAnswersMatchTheirQuestions(t *testing.T) {
	ctx := context.Background()
	for range 3 { // the branches' order differs from run to run
		rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: demo.ByRequest(scripted.New(script), "researcher", facts)})
		if err != nil {
			t.Fatal(err)
		}
		run, err := content.Start(ctx, rt, "urban beekeeping")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			st, err := rt.Wait(ctx, run.ID())
			if err != nil {
				t.Fatal(err)
			}
			if st.State != swarm.StatePaused {
				if st.State != swarm.StateCompleted {
					t.Fatalf("ended %s: %s", st.State, st.Reason)
				}
				break
			}
			if err := rt.Resume(ctx, run.ID(), reviews[i]); err != nil {
				t.Fatal(err)
			}
		}
		asked := map[string]string{}
		answered := 0
		for ev, err := range rt.Events(ctx, run.ID(), 0) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Target != "researcher" {
				if ev.Type == swarm.EventCompleted {
					break
				}
				continue
			}
			switch ev.Type {
			case swarm.EventHandoffStarted:
				asked[strings.Replace(ev.Key, "/call/", "/", 1)] = ev.Request
			case swarm.EventHandoffReturned:
				q := asked[strings.Replace(ev.Key, "/tool/", "/", 1)]
				if ev.Output != facts[q] {
					t.Errorf("the researcher answered %q with %q, want %q", q, ev.Output, facts[q])
				}
				answered++
			}
		}
		if answered != 8 {
			t.Errorf("%d research answers, want 8 (2 sub-topics, then 3 with the evaluator's gap, then 3 with the reviewer's change)", answered)
		}
		rt.Close()
	}
}
