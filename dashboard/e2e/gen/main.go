// Command gen fills a SQLite store for the dashboard's figures: RUNS runs
// of swarm "trip" (one in five a child of the run before it) and one run,
// "big" (or the -id given), whose journal holds EVENTS events, as a long
// run's would.
//
//	go run ./dashboard/e2e/gen -store DIR/.swarm/runs.db -runs 100000 -events 10000
//	go run ./dashboard/e2e/gen -store DIR/.swarm/runs.db -runs 0 -events 100000 -id big100k
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/sqlite"
)

func main() {
	path := flag.String("store", ".swarm/runs.db", "SQLite store to fill")
	runs := flag.Int("runs", 100000, "runs to create")
	events := flag.Int("events", 10000, "events of run big")
	id := flag.String("id", "big", "id of the long run")
	flag.Parse()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, *path)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	if err := big(ctx, st, *id, *events); err != nil {
		log.Fatal(err)
	}
	if err := many(ctx, st, *runs); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("created %d runs and run %s of %d events in %s\n", *runs, *id, *events, time.Since(start).Round(time.Millisecond))
}

func rec(key string, ev swarm.Event) store.Record {
	typ := ev.Type
	ev.Type = ""
	b, _ := json.Marshal(ev)
	return store.Record{Key: key, Type: string(typ), Data: b, Time: time.Now()}
}

func startRec(in string) store.Record {
	raw, _ := json.Marshal(in)
	return rec("start", swarm.Event{Type: swarm.EventStarted, Swarm: "trip", Agent: "trip", Input: raw, MaxTurns: 100000})
}

// big writes run id with n events: rounds of a model response with two
// parallel tool calls, their results and the round's end.
func big(ctx context.Context, st store.Store, id string, n int) error {
	l, err := st.Create(ctx, store.Run{ID: id, Swarm: "trip", Agent: "trip", MaxTurns: 100000}, "gen", time.Hour, []store.Record{startRec("a long run")})
	if err != nil {
		return err
	}
	var batch []store.Record
	u := model.Usage{}
	for turn := 1; ; turn++ {
		tk := fmt.Sprintf("t%d", turn)
		usage := model.Usage{InputTokens: 900, OutputTokens: 60, Calls: 1, Cost: 0.0012}
		u = u.Add(usage)
		calls := []model.ToolCall{
			{ID: tk + "a", Name: "book", Arguments: json.RawMessage(`{"item":"hut"}`)},
			{ID: tk + "b", Name: "book", Arguments: json.RawMessage(`{"item":"bus"}`)},
		}
		batch = append(batch, rec(tk+"/model", swarm.Event{Type: swarm.EventModelResponse, Agent: "trip", Turn: turn, ToolCalls: calls, Usage: &usage, Text: "Booking the hut and the bus for round " + tk}))
		for _, c := range calls {
			batch = append(batch, rec(tk+"/call/"+c.ID, swarm.Event{Type: swarm.EventToolCall, Agent: "trip", Tool: c.Name, CallID: c.ID, Arguments: c.Arguments}))
		}
		for _, c := range calls {
			batch = append(batch, rec(tk+"/tool/"+c.ID, swarm.Event{Type: swarm.EventToolResult, Agent: "trip", Tool: c.Name, CallID: c.ID, Output: "booked " + string(c.Arguments)}))
		}
		batch = append(batch, rec(tk+"/done", swarm.Event{Type: swarm.EventTurnCompleted, Agent: "trip", Turn: turn, MaxTurns: 100000}))
		total := 1 + turn*6
		if total+1 >= n {
			res := json.RawMessage(`"done"`)
			batch = append(batch, rec("end", swarm.Event{Type: swarm.EventCompleted, Result: res}))
			_, err := st.Append(ctx, l, batch, store.Update{State: store.Completed, Turn: turn, Result: res, Usage: &u})
			return err
		}
		if len(batch) >= 600 {
			if _, err := st.Append(ctx, l, batch, store.Update{Turn: turn, Usage: &u}); err != nil {
				return err
			}
			batch = nil
		}
	}
}

// many creates n finished runs, from 8 goroutines (the store commits
// their transactions in groups).
func many(ctx context.Context, st store.Store, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				id := fmt.Sprintf("run_%07d", i)
				parent := ""
				if i%5 == 4 {
					parent = fmt.Sprintf("run_%07d", i-1)
				}
				l, err := st.Create(ctx, store.Run{ID: id, Swarm: "trip", Parent: parent, Agent: "trip", MaxTurns: 10}, "gen", time.Hour, []store.Record{startRec("two people")})
				if err != nil {
					errs <- err
					return
				}
				u := model.Usage{InputTokens: 1200, OutputTokens: 80, Calls: 2, Cost: 0.002}
				if _, err := st.Append(ctx, l, []store.Record{rec("end", swarm.Event{Type: swarm.EventCompleted, Result: json.RawMessage(`"ok"`)})},
					store.Update{State: store.Completed, Turn: 2, Result: json.RawMessage(`"ok"`), Usage: &u}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
