// Command tutorial is the swarm of the tutorial (docs/tutorial.md): a trip
// planner that books a hut with a typed tool, asks a weather agent, and
// pauses for a person's approval before it answers. It is its own small
// command, so that each step of the tutorial is a process you can kill:
//
//	tutorial run ID INPUT      start run ID (or follow it if it exists)
//	tutorial recover           continue the runs whose process died
//	tutorial resume ID ANSWER  answer a paused run
//	tutorial serve ADDR        the HTTP API and the dashboard; a node of a cluster
//
// Runs are kept in $SWARM_STORE (default sqlite:.swarm/runs.db, where the
// swarm command looks too). The model is scripted, so everything runs
// offline; set SWARM_MODEL (or OPENAI_API_KEY, ANTHROPIC_API_KEY) for a real one.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/server"
	"github.com/swarmrt/swarm/store"
	_ "github.com/swarmrt/swarm/store/postgres"
	_ "github.com/swarmrt/swarm/store/sqlite"
)

// snippet tools
// Plan is the trip's typed result: the model must answer with this JSON.
type Plan struct {
	Plan   string   `json:"plan" jsonschema:"what to do, day by day"`
	Booked []string `json:"booked" jsonschema:"what was booked"`
}

// BookIn is the book tool's input; its JSON schema is derived from the type
// and the model's arguments are checked against it before the call.
type BookIn struct {
	Item   string `json:"item" jsonschema:"what to book: a hut, a bus, a guide"`
	Nights int    `json:"nights,omitempty"`
}

var book = swarm.NewTool("book", "Books an item and returns a confirmation",
	func(ctx context.Context, in BookIn) (string, error) {
		// The same key on every attempt of this call, across crashes: a
		// real booking service would refuse a second booking under it.
		key := swarm.IdempotencyKey(ctx)
		fmt.Fprintf(os.Stderr, "  (the book tool runs: %s, idempotency key %s)\n", in.Item, key)
		return "booked " + in.Item + " (confirmation " + key + ")", nil
	})

type DayIn struct {
	Day string `json:"day" jsonschema:"saturday or sunday"`
}

var forecast = swarm.NewTool("forecast", "The forecast for a day",
	func(_ context.Context, in DayIn) (string, error) {
		return map[string]string{"saturday": "sunny, 22C", "sunday": "rain, 14C"}[strings.ToLower(in.Day)], nil
	})

// end snippet

// snippet swarm
var weather = &swarm.Agent{
	Name:         "weather",
	Description:  "Weather forecasts for the weekend",
	Instructions: "You answer questions about the weather with the forecast tool.",
	Tools:        []swarm.Tool{forecast},
}

var trip = swarm.Define[string, Plan]("trip", "Plans and books a weekend trip",
	func(string) swarm.Spec {
		return swarm.Spec{
			Instructions: "Plan a weekend trip for {{.Input}}: book a hut, ask the weather agent, " +
				"then ask for approval with the pause tool before you answer with the plan.",
			Tools:    []swarm.Tool{book},
			Handoffs: []swarm.Handoff{swarm.ToAgent(weather)},
		}
	})

// end snippet

// script is what the scripted model answers, call after call, per agent:
// the same answers after a crash, so a recovered run ends as a clean one.
// The weather agent's second answer takes 3 s: time to kill the process.
var script = scripted.Script{
	"trip": {
		scripted.Tools(scripted.CallTool("book", map[string]any{"item": "hut", "nights": 2})),
		scripted.Tools(scripted.CallTool("handoff_to_weather", map[string]any{"request": "the weekend"})),
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "approve the hut for 120 EUR?", "context": "2 nights"})),
		scripted.Text(`{"plan": "hike on Saturday, rest in the hut on Sunday", "booked": ["hut"]}`),
	},
	"weather": {
		scripted.Tools(scripted.CallTool("forecast", map[string]any{"day": "saturday"})),
		{Text: "Sunny on Saturday, rain on Sunday.", Delay: 3 * time.Second},
	},
}

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tutorial run ID INPUT | recover | resume ID ANSWER | serve ADDR")
		os.Exit(2)
	}
	// snippet runtime
	url := os.Getenv("SWARM_STORE")
	if url == "" {
		url = "sqlite:.swarm/runs.db"
		demo.Exit(os.MkdirAll(".swarm", 0o755))
	}
	st, err := store.Open(ctx, url)
	demo.Exit(err)
	// A process that dies holds its runs for its lease: short here, so
	// that the tutorial's recoveries are quick (the default is 30 s).
	rt, err := swarm.New(swarm.Config{Store: st, Model: chooseModel(), Lease: 3 * time.Second})
	demo.Exit(err)
	demo.Exit(rt.Register(trip))
	// end snippet
	defer rt.Close()
	args := os.Args[2:]
	switch cmd := os.Args[1]; {
	case cmd == "run" && len(args) >= 2:
		os.Exit(runTrip(ctx, rt, args[0], strings.Join(args[1:], " ")))
	case cmd == "recover" && len(args) == 0:
		os.Exit(recoverRuns(ctx, rt))
	case cmd == "resume" && len(args) == 2:
		os.Exit(resume(ctx, rt, args[0], args[1]))
	case cmd == "serve" && len(args) == 1:
		demo.Exit(serve(ctx, rt, args[0]))
	default:
		fmt.Fprintln(os.Stderr, "usage: tutorial run ID INPUT | recover | resume ID ANSWER | serve ADDR")
		os.Exit(2)
	}
}

// chooseModel is the scripted model, or a real one when SWARM_MODEL names it.
func chooseModel() model.Model {
	if spec := os.Getenv("SWARM_MODEL"); spec != "" {
		m, err := model.Open(spec)
		demo.Exit(err)
		return m
	}
	return scripted.New(script)
}

// snippet run
func runTrip(ctx context.Context, rt *swarm.Runtime, id, input string) int {
	run, err := trip.Start(ctx, rt, input, swarm.WithID(id))
	demo.Exit(err)
	fmt.Fprintf(os.Stderr, "run %s started: each step below is journaled before the run moves on\n", run.ID())
	return wait(ctx, rt, run.ID(), 0)
}

// end snippet

// wait follows run id's journal from sequence after, and returns the exit
// status of its outcome: 0 completed (the plan on stdout), 3 paused, 1 else.
func wait(ctx context.Context, rt *swarm.Runtime, id string, after int64) int {
	demo.Follow(ctx, os.Stderr, rt, id, after)
	s, err := rt.Wait(ctx, id)
	demo.Exit(err)
	switch s.State {
	case store.Completed:
		fmt.Println(string(s.Result))
		return 0
	case store.Paused:
		fmt.Fprintf(os.Stderr, "answer it from any process: %s resume %s ANSWER\n", self(), id)
		return 3
	default:
		fmt.Fprintf(os.Stderr, "run %s %s: %s\n", id, s.State, s.Reason)
		return 1
	}
}

// self is how to run this program again: ./trip when built as the
// tutorial says, else its path.
func self() string {
	if strings.Contains(os.Args[0], "go-build") {
		return "go run ./examples/tutorial"
	}
	return os.Args[0]
}

// snippet recover
func recoverRuns(ctx context.Context, rt *swarm.Runtime) int {
	for {
		ids, err := rt.Recover(ctx) // claims the runs whose owner's lease expired
		demo.Exit(err)
		for _, id := range ids {
			s, _ := rt.Status(ctx, id)
			fmt.Fprintf(os.Stderr, "run %s: its process died; continuing it here after its %d journaled events\n", id, s.LastSeq)
			fmt.Fprintln(os.Stderr, "  (what was journaled is not done again; the step in flight is)")
			return wait(ctx, rt, id, s.LastSeq)
		}
		// A run still leased by a process that died: wait for its lease.
		held, err := rt.Store().List(ctx, store.Filter{State: store.Running, TopLevel: true})
		demo.Exit(err)
		if len(held) == 0 {
			fmt.Fprintln(os.Stderr, "no run to recover")
			return 0
		}
		fmt.Fprintf(os.Stderr, "run %s is held by %s until its lease expires (%s)\n",
			held[0].ID, held[0].Owner, time.Until(held[0].LeaseUntil).Round(100*time.Millisecond))
		time.Sleep(max(time.Until(held[0].LeaseUntil), 100*time.Millisecond))
	}
}

// end snippet

// snippet resume
func resume(ctx context.Context, rt *swarm.Runtime, id, answer string) int {
	before, err := rt.Status(ctx, id)
	demo.Exit(err)
	demo.Exit(rt.Resume(ctx, id, answer)) // journaled, then the run continues here
	fmt.Fprintf(os.Stderr, "run %s: answered %q; continuing\n", id, answer)
	return wait(ctx, rt, id, before.LastSeq)
}

// end snippet

// snippet serve
func serve(ctx context.Context, rt *swarm.Runtime, addr string) error {
	ui, err := dashboard.New(rt, dashboard.Options{})
	if err != nil {
		return err
	}
	srv, err := server.New(rt, server.Options{Mounts: ui.Mounts()})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "serving on http://%s: the API under /v1/, the dashboard at /ui/\n", ln.Addr())
	go func() { _ = http.Serve(ln, srv) }()
	// The node claims runs that are runnable: resumed, or whose owner died.
	err = rt.Work(ctx, swarm.WorkOptions{DrainTimeout: 5 * time.Second})
	if errors.Is(err, swarm.ErrClosed) {
		err = nil
	}
	return err
}

// end snippet
