package strategytest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
	"github.com/swarmrt/swarm/team"
)

type ticket struct {
	Event string `json:"event"`
	Seats int    `json:"seats"`
}

type booking struct {
	Confirmation string `json:"confirmation"`
}

// The simple loop with what a run tree does: an agent handoff that calls a
// tool, a child swarm that pauses for a human, an answer, and a result.
func TestSimpleLoop(t *testing.T) {
	forecast := swarm.NewTool("forecast", "the forecast", func(ctx context.Context, _ struct{}) (string, error) { return "22C", nil })
	weather := &swarm.Agent{Name: "weather", Instructions: "Forecast.", Tools: []swarm.Tool{forecast}}
	ticketing := swarm.Define[ticket, booking]("ticketing", "books tickets", func(ticket) swarm.Spec {
		return swarm.Spec{Instructions: "Book {{.Input.seats}} seats for {{.Input.event}}."}
	})
	outing := swarm.Define[string, string]("outing", "plans an outing", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Plan: {{.Input}}", Handoffs: []swarm.Handoff{swarm.ToAgent(weather), swarm.ToSwarm(ticketing)}}
	})
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{ticketing, outing},
		Swarm:       "outing",
		Input:       []byte(`"a concert"`),
		Answers:     []string{"approved"},
		Script: scripted.Script{
			"outing": {
				scripted.Tools(
					scripted.CallTool("handoff_to_weather", map[string]any{"request": "tonight?"}),
					scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "jazz", "seats": 2}}),
				),
				scripted.Text("A dry evening of jazz."),
			},
			"weather": {scripted.Tools(scripted.CallTool("forecast", map[string]any{})), scripted.Text("dry")},
			"ticketing": {
				scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "2 seats cost 80 EUR"})),
				scripted.Text(`{"confirmation": "JZ-2"}`),
			},
		},
	})
}

// A team: the lead spawns an idle teammate and one with a first task, which
// mails the first; the lead answers the user and waits for the next
// message, and the teammates go idle.
func TestTeam(t *testing.T) {
	crew := team.DefineTeam("crew", "A lead and its teammates", team.TeamSpec{
		Lead: &swarm.Agent{Name: "lead", Instructions: "Lead the team."},
	})
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{crew},
		Swarm:       "crew",
		Input:       []byte(`""`),
		Answers:     []string{"Have alice tell bob the parser is ready."},
		Want:        swarm.StatePaused,
		Timing:      true,
		Stores:      []string{strategytest.Memory, strategytest.SQLite},
		Script: scripted.Script{
			"lead": {
				scripted.Tools(scripted.CallTool("spawn_teammate", map[string]string{"name": "bob", "role": "tester"})),
				scripted.Tools(scripted.CallTool("spawn_teammate", map[string]string{"name": "alice", "role": "coder", "prompt": "Tell bob the parser is ready."})),
				scripted.Text("alice is telling bob."),
			},
			"alice": {
				scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": "bob", "content": "The parser is ready."})),
				scripted.Text("Told bob."),
			},
			"bob": {scripted.Text("Noted: the parser is ready.")},
		},
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			var said []string
			for _, r := range runsOf(t, rt) {
				for _, ev := range swarmtest.Events(t, rt, r) {
					if ev.Type == swarm.EventModelResponse && ev.Text != "" {
						said = append(said, ev.Text)
					}
				}
			}
			slices.Sort(said)
			if want := []string{"Noted: the parser is ready.", "Told bob.", "alice is telling bob."}; !slices.Equal(said, want) {
				t.Errorf("the team said %q, want %q", said, want)
			}
		},
	})
}

func runsOf(t *testing.T, rt *swarm.Runtime) []string {
	t.Helper()
	all, err := rt.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.ID)
	}
	return ids
}
