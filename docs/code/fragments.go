package code

// The guide's Go fragments, each between "// snippet NAME" and "// end
// snippet", inside functions whose parameters and the declarations below
// stand for what a real program would have around them.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/network"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
	"github.com/swarmrt/swarm/team"
	"github.com/swarmrt/swarm/telemetry"
	"github.com/swarmrt/swarm/workflow"
)

// Types the fragments use.
type (
	Recommendation struct{ Activity string }
	Brief          struct{ Summary string }
	Approval       struct{ OK bool }
	Plan           struct{ Plan string }
	Order          struct{ Event string }
	Request        struct{ N int }
	Verdict        struct{ Broken bool }
	DiscountIn     struct{ Percent int }
)

var (
	forecastFunc = func(ctx context.Context, in struct{ Day string }) (string, error) { return "sunny", nil }
	agentOf      = func(name string) *swarm.Agent { return &swarm.Agent{Name: name} }
	png, png2    []byte
	jpg          []byte
	draw         = func() []byte { return nil }
	pdf          = func() []byte { return nil }
	save         = func([]byte) {}
	tools        []swarm.Tool
)

func concepts(ctx context.Context, sqliteStore store.Store, m model.Model) {
	// snippet concepts
	weather := &swarm.Agent{
		Name:         "weather",
		Description:  "Weather forecasts",
		Instructions: "You forecast the weather for {{.Input}}.", // text/template over the run's values
		Tools:        []swarm.Tool{swarm.NewTool("forecast", "Forecast for a day", forecastFunc)},
	}

	planner := swarm.Define[string, Recommendation]("activity-planner", "Recommends outdoor activities",
		func(request string) swarm.Spec { // computed from each run's input
			return swarm.Spec{
				Instructions: "Gather the weather, then recommend one activity.",
				Handoffs:     []swarm.Handoff{swarm.ToAgent(weather)},
				MaxTurns:     10,
			}
		})

	rt, _ := swarm.New(swarm.Config{Store: sqliteStore, Model: m})
	run, _ := planner.Start(ctx, rt, "Something outdoors this weekend") // returns at once
	res, _ := run.Wait(ctx)
	switch r := res.(type) {
	case swarm.Completed[Recommendation]:
		fmt.Println(r.Output.Activity) // r.Output is typed
	case swarm.Paused:
		fmt.Println(r.Reason) // continue with run.Resume(ctx, "approved")
	case swarm.Failed:
		fmt.Println(r.Reason) // and swarm.Stopped
	}
	// end snippet
}

func crashTest(t *testing.T, trip swarm.Definition, script scripted.Script) {
	// snippet strategytest
	strategytest.Run(t, strategytest.Case{Definitions: []swarm.Definition{trip}, Swarm: "trip",
		Input: []byte(`"two people"`), Script: script, Answers: []string{"approved"}})
	// end snippet
}

func adaptiveLoop(searcher, analyst, critic *swarm.Agent) *swarm.Swarm[string, Brief] {
	// snippet adaptive
	research := swarm.Define[string, Brief]("research", "Researches a topic", func(string) swarm.Spec {
		return swarm.Spec{
			Instructions: "You research topics thoroughly.",
			Handoffs:     []swarm.Handoff{swarm.ToAgent(searcher), swarm.ToAgent(analyst), swarm.ToAgent(critic)},
			Strategy:     strategy.Of(adaptive.New().WithEvaluator("critic").WithStallThreshold(3).WithMaxReplans(2)),
		}
	})
	// end snippet
	return research
}

// snippet strategy
type bestOfTwo struct{}

func (bestOfTwo) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	var question string
	_ = json.Unmarshal(d.Input(), &question)
	a, err := d.Delegate(ctx, "answer/1", "optimist", question)
	if err != nil {
		return nil, err
	}
	b, err := d.Delegate(ctx, "answer/2", "pessimist", question)
	if err != nil {
		return nil, err
	}
	choice, err := d.Await(ctx, "sign-off", strategy.Question{Reason: "Send " + a + " or " + b + "?"})
	if err != nil {
		return nil, err // strategy.ErrAwaiting: the run pauses until a human answers
	}
	return json.Marshal(choice)
}

// end snippet

func workflows(planner, legal, brand, tone *swarm.Agent) *swarm.Swarm[string, Approval] {
	// snippet workflow
	plan := workflow.Agent[string, Brief](planner).Retry(1) // the answer's JSON, as a Brief
	review := workflow.Parallel("review", workflow.Join{Mode: workflow.Quorum, N: 2},
		workflow.Agent[Brief, string](legal), workflow.Agent[Brief, string](brand), workflow.Agent[Brief, string](tone))
	ok := workflow.Human[[]string, Approval]("approve", 3, func(notes []string) string { return "Ship it? " + strings.Join(notes, "; ") })
	launch := workflow.Define("launch", "Plans, reviews and approves a launch", workflow.Then(workflow.Then(plan, review), ok))
	// launch is a *swarm.Swarm[string, Approval]: register it, run it, serve it like any swarm.
	// end snippet
	return launch
}

func composition(ctx context.Context, rt *swarm.Runtime, ticketing *swarm.Swarm[Order, string]) {
	// snippet composition
	booking := swarm.Define[string, Plan]("booking", "Plans an activity and books it", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{
			swarm.ToSwarm(ticketing),                  // handoff_to_ticketing({input: Order})
			swarm.ToSwarmID("refunds").Customizable(), // + a customization argument
		}}
	})
	run, _ := booking.Start(ctx, rt, "jazz for two",
		swarm.WithParams(swarm.Params{Instructions: "Only evening events."}), // call-site replacement
		swarm.WithBudget(swarm.Budget{Tokens: 200_000, Cost: 0.50, WallTime: 10 * time.Minute}))
	// end snippet
	_ = run
}

// snippet provide
// package factor
func init() {
	absorb.Provide(absorb.Provider{
		ID:          "acme.math.factor", // namespaced; the last label is the agent's name
		Description: "Factors integers into primes",
		Skills:      []absorb.Skill{{Name: "factor", Description: "the prime factors of n", Input: absorb.InputOf[Request]()}},
		Build:       New, // func() *swarm.Agent, called by each Discover
	})
}

// end snippet

// New builds the factor agent of the absorb fragment.
func New() *swarm.Agent { return agentOf("factor") }

func captain(ctx context.Context, rt *swarm.Runtime, captain *swarm.Agent) error {
	// snippet discover
	// the program: every provided agent but the captain becomes a tool of the captain
	siblings, err := absorb.Discover() // or Discover("acme.math"): sorted by provider id
	if err != nil {
		return err
	}
	err = absorb.Into(captain, siblings...) // checked now: see below
	if err != nil {
		return err
	}
	res, run, err := absorb.Captain(captain).Run(ctx, rt, "factor 30") // a text swarm led by captain
	// end snippet
	_, _ = res, run
	return err
}

func partsIn(ctx context.Context, rt *swarm.Runtime, describe *swarm.Swarm[string, string], session *conversation.Session[struct{}]) error {
	// snippet parts-in
	run, err := describe.Start(ctx, rt, "What is wrong on this screen?", swarm.WithParts(model.Image("image/png", png)))
	reply, err := session.Say(ctx, "And on this one?", swarm.WithMessageParts(model.Image("image/png", png2)))

	chart := swarm.NewTool("chart", "Draws the sales chart", func(ctx context.Context, in struct{}) (string, error) {
		return "the chart is attached", swarm.AttachParts(ctx, model.Image("image/png", draw()))
	})
	// end snippet
	_, _, _ = run, reply, chart
	return err
}

// snippet shot
type Shot struct {
	Caption string     `json:"caption"`
	Photo   model.Part `json:"photo"`
}

// end snippet

func partsOut(ctx context.Context, rt *swarm.Runtime, describe *swarm.Swarm[Shot, Verdict]) error {
	// snippet parts-out
	render := swarm.NewTool("render", "Renders the report", func(ctx context.Context, in struct{}) (string, error) {
		return "rendered", swarm.AttachOutput(ctx, model.File("report.pdf", "application/pdf", pdf()))
	})
	res, _, err := describe.Run(ctx, rt, Shot{Caption: "the garden", Photo: model.Image("image/jpeg", jpg)})
	if c, ok := res.(swarm.Completed[Verdict]); ok {
		save(c.Parts[0].Data)
	}
	// end snippet
	_ = render
	return err
}

func a2aServer(rt *swarm.Runtime, authenticator *auth.Authenticator, mux *http.ServeMux) {
	// snippet a2a
	h, _ := a2a.NewHandler(rt, a2a.Options{Auth: authenticator}) // BaseURL, Swarms, Default: optional
	mux.Handle(a2a.PathPrefix, h)                                // "/a2a/"
	mux.Handle(a2a.CardPath, h)                                  // "/.well-known/agent-card.json"
	// end snippet
}

func oauthClients(st store.Store, c2 *auth.Client) {
	// snippet oauth
	key, _ := auth.SecretKeyFromEnv()                         // $SWARM_SECRET_KEY: 32 bytes, base64
	tokens, _ := auth.NewSealedStore(st.(store.Secrets), key) // tokens kept in the store, AES-256-GCM
	c, _ := auth.NewClient(auth.ClientConfig{URL: "https://tools.example.com/mcp", ClientID: "swarm",
		ClientSecret: os.Getenv("TOOLS_SECRET"), Scopes: []string{"tools:read"}, Store: tokens})
	ts := &mcp.Toolset{Name: "tools", URL: "https://tools.example.com/mcp", OAuth: c}                   // an MCP server
	remote, _ := a2a.Remote("research", "https://agents.example.com/a2a/researcher", a2a.WithOAuth(c2)) // an A2A agent
	// end snippet
	_, _ = ts, remote
}

func conversations(ctx context.Context, rt, rt2 *swarm.Runtime, receptionist *swarm.Agent) {
	// snippet conversation
	type Lead struct {
		Topic    string `json:"topic"`
		Discount int    `json:"discount"`
	}
	discount := swarm.NewTool("apply_discount", "Grant a discount", func(ctx context.Context, in DiscountIn) (string, error) {
		_, err := conversation.UpdateContext(ctx, func(l *Lead) { l.Discount = in.Percent }) // journaled with the result
		return "granted", err
	})
	sales := &swarm.Agent{Name: "sales", Instructions: "You sell {{.Context.Topic}}.", Tools: []swarm.Tool{discount}}
	desk := conversation.Define("front-desk", "Receptionist and sales", conversation.Spec[Lead]{
		Queen:     receptionist,
		Agents:    []*swarm.Agent{sales},
		Handovers: map[string][]conversation.Handover{"receptionist": {{To: "sales", Sets: []string{"topic"}}}},
		// ReturnToQueen, MaxTurns (per user message), History, AgentHistory, NameSpeakers, Context, OnStep
	})
	session, _ := desk.Start(ctx, rt)                // or StartWith(ctx, rt, Lead{...}), swarm.WithID("chat-42")
	reply, _ := session.Say(ctx, "I'd like a CRM")   // reply.Agent, reply.Text, reply.Active, reply.Context
	session, _ = desk.Attach(ctx, rt2, session.ID()) // another process continues it
	// end snippet
	_ = reply
}

func teams(ctx context.Context, rt, rt2 *swarm.Runtime) {
	// snippet team
	crew := team.DefineTeam("crew", "A lead and its teammates", team.TeamSpec{
		Lead:     &swarm.Agent{Name: "lead", Instructions: "You lead a team. Spawn teammates and coordinate them."},
		Template: team.Teammate{Instructions: "You are {{.Name}}, the {{.Role}} of a team led by {{.Lead}}."},
		Members:  []team.Teammate{{Name: "alice", Role: "coder", Prompt: "Write the parser.", Tools: tools}},
		// Autonomous, RequestTimeout (10m), MaxWakes (100), MaxTurns, MaxMembers (32)
	})
	tr, _ := crew.Start(ctx, rt, "") // or a first task for the lead; swarm.WithID("crew-1")
	reply, _ := tr.Say(ctx, "Spawn bob (tester) and have alice send him a message.")
	members, _ := tr.Roster(ctx)                  // name, role, state, unread, run id
	tr.Send(ctx, "bob", "run the tests")          // from the user; tr.Broadcast(ctx, text); team.WithMailID(id)
	tr.AddTask(ctx, "Write the migration", "", 1) // blocked by task 1; tr.Tasks(ctx), tr.Requests(ctx)
	tr, _ = team.Open(ctx, rt2, tr.ID())          // another process, same team
	// end snippet
	_, _ = reply, members
}

func networks(ctx context.Context, rt, rt2 *swarm.Runtime, inventory swarm.Tool, agent *swarm.Agent) {
	// snippet network
	kitchen, _ := network.New(network.Options{ID: "kitchen"})
	kitchen.Share(network.ShareTool(inventory, "food", "stock"), network.ShareSwarm("prepare-meal", "food", "cooking"))
	http.Handle("/v1/network/", kitchen.Handler())
	kitchen.Start(ctx, network.StartOptions{Runtime: rt, URL: "http://10.0.0.5:8080"})

	room, _ := network.New(network.Options{Peers: []string{"http://10.0.0.5:8080"}})
	room.Start(ctx, network.StartOptions{Runtime: rt2})
	agent.Tools = []swarm.Tool{
		room.Discover("check-inventory"),                     // bound to the capability, not a provider
		room.Catalog(network.Filter{Tags: []string{"food"}}), // resolved at every model call
	}
	room.Registry().Find("check-inventory") // also Providers(name), ByTag(tag), All(), Len()
	// end snippet
}

func guardrails() swarm.Spec {
	// snippet guardrail
	noSecrets := guardrail.Guardrail{Name: "no_secrets", Points: []guardrail.Point{guardrail.Output},
		Check: func(ctx context.Context, c guardrail.Check) (guardrail.Verdict, error) {
			if strings.Contains(c.Text, "password") {
				return guardrail.Verdict{Action: guardrail.Tripwire, Message: "leaks a password"}, nil
			}
			return guardrail.Verdict{Action: guardrail.Allow}, nil
		}}
	spec := swarm.Spec{Guardrails: []guardrail.Guardrail{noSecrets}, HoldStream: true}
	// end snippet
	return spec
}

func observability(ctx context.Context) error {
	// snippet telemetry
	tel, err := telemetry.FromEnv(ctx) // nil when no OTEL_* variable asks for export
	if err != nil {
		return err
	}
	defer tel.Shutdown(ctx)
	cfg := swarm.Config{}
	tel.Apply(&cfg) // sets cfg.TracerProvider, cfg.MeterProvider (any OpenTelemetry providers work)
	// end snippet
	return nil
}

func compaction() swarm.Spec {
	// snippet compaction
	spec := swarm.Spec{Tools: tools, Compaction: &compact.Config{Window: 128000, Trigger: 0.8, Keep: 4}}
	// end snippet
	return spec
}

func memoryBank(ctx context.Context, rt *swarm.Runtime, input json.RawMessage) {
	// snippet memory
	mem := &memory.Memory{Store: rt.Store(), Bank: "user:{user}", Limits: store.BankLimits{MaxEntries: 1000}}
	support := &swarm.Agent{Name: "support", Instructions: "...", Tools: mem.Tools()}
	rt.Start(ctx, "desk", input, swarm.WithValues(map[string]any{"user": "alice"}))
	// end snippet
	_ = support
}
