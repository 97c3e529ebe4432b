// Command hello runs the swarm "hello" of swarm.yaml from Go: the same
// agent, command tool and scripted model as `swarm run hello`, its runs in
// the same store (.swarm/runs.db), so `swarm ls` and `swarm events` show
// them too. Run it with
//
//	go run . "durable execution"
//
// Kill it while it runs (Ctrl-C, or kill -9) and run it again: it first
// finishes the interrupted run from its last journaled step, then starts a
// new one. Set SWARM_MODEL (e.g. openai:gpt-4.1-mini) to use a real model.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	_ "github.com/swarmrt/swarm/model/anthropic" // providers register themselves
	_ "github.com/swarmrt/swarm/model/openai"
	_ "github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/sqlite"
)

// Summary is the swarm's result, as its result_schema in swarm.yaml says.
type Summary struct {
	Summary string `json:"summary"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	topic := cmp.Or(strings.Join(os.Args[1:], " "), "durable execution")
	if err := run(ctx, topic); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, topic string) error {
	// The definitions: agents, swarms and tools, and the default model.
	defs, err := config.Load("swarm.yaml")
	if err != nil {
		return err
	}
	defer defs.Close()
	spec := cmp.Or(os.Getenv("SWARM_MODEL"), defs.Model)
	m, err := defs.OpenModel(spec)
	if err != nil {
		return err
	}
	// The journal: every step of a run is written here before the run
	// moves on.
	if err := os.MkdirAll(".swarm", 0o755); err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, ".swarm/runs.db")
	if err != nil {
		return err
	}
	defer st.Close()
	rt, err := swarm.New(swarm.Config{Store: st, Model: m, ModelSpec: spec, OpenModel: defs.OpenModel})
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := defs.Register(rt); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "model %s, store .swarm/runs.db\n", spec)

	// Runs that a crash interrupted continue from their last journaled
	// step; nothing journaled runs again.
	ids, err := rt.Recover(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		fmt.Fprintf(os.Stderr, "continuing run %s, interrupted earlier\n", id)
		if err := show(ctx, rt, id); err != nil {
			return err
		}
	}

	input, err := json.Marshal(topic)
	if err != nil {
		return err
	}
	id, err := rt.Start(ctx, "hello", input)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "run %s of swarm hello about %q\n", id, topic)
	return show(ctx, rt, id)
}

// show prints what happens in run id, from its journal, until it ends,
// then its result.
func show(ctx context.Context, rt *swarm.Runtime, id string) error {
	for ev, err := range rt.Events(ctx, id, 0) {
		if err != nil {
			return err
		}
		switch ev.Type {
		case swarm.EventHandoffStarted:
			fmt.Fprintf(os.Stderr, "  %s asks %s: %s\n", ev.Agent, ev.Target, ev.Request)
		case swarm.EventHandoffReturned:
			fmt.Fprintf(os.Stderr, "  %s answers: %s\n", ev.Target, ev.Output)
		case swarm.EventToolResult:
			fmt.Fprintf(os.Stderr, "  tool %s: %s\n", ev.Tool, strings.TrimSpace(ev.Output))
		case swarm.EventPaused:
			return fmt.Errorf("run %s paused: %s (answer it with: swarm resume %s MESSAGE)", id, ev.Reason, id)
		}
	}
	status, err := rt.Wait(ctx, id)
	if err != nil {
		return err
	}
	if status.State != swarm.StateCompleted {
		return fmt.Errorf("run %s %s: %s", id, status.State, status.Reason)
	}
	var out Summary
	if err := json.Unmarshal(status.Result, &out); err != nil {
		return errors.Join(fmt.Errorf("run %s: result %s", id, status.Result), err)
	}
	fmt.Println(out.Summary)
	return nil
}
