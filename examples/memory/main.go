// Command memory runs the memory example of swarm.yaml twice, as two
// processes would: a support agent books a flight for alice and remembers
// the seat she prefers in her memory bank (user:alice, in the store); the
// second run, on a new runtime, searches her bank, finds the preference and
// books with it, without asking or writing it again.
//
//	go run ./examples/memory
//
// The same with the swarm command, in this directory (see swarm.yaml):
//
//	swarm run --values '{"user": "alice"}' support "Book me on the Lisbon flight, aisle seat please"
//	swarm run --model scripted:again.yaml --values '{"user": "alice"}' support "Book me on the Porto flight"
//	swarm memory ls user:alice
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/sqlite"
)

// visits are the two runs: the customer's request and the script the
// model of that run's process answers from.
var visits = []struct{ input, script string }{
	{"Book me on the Lisbon flight, aisle seat please", "script.yaml"},
	{"Book me on the Porto flight", "again.yaml"},
}

func main() {
	dir, err := exampleDir()
	demo.Exit(err)
	tmp, err := os.MkdirTemp("", "swarm-memory-")
	demo.Exit(err)
	defer os.RemoveAll(tmp)
	_, err = run(context.Background(), dir, filepath.Join(tmp, "runs.db"), os.Stderr)
	demo.Exit(err)
}

// exampleDir finds this example's files from the repository's root (go
// run ./examples/memory) or from the example's directory.
func exampleDir() (string, error) {
	for _, d := range []string{filepath.Join("examples", "memory"), "."} {
		if _, err := os.Stat(filepath.Join(d, "again.yaml")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("run this example from the repository's root (go run ./examples/memory) or from examples/memory")
}

// run plays the visits on one SQLite file, each on a runtime of its own as
// a new process would, and returns their run ids.
func run(ctx context.Context, dir, db string, w io.Writer) ([]string, error) {
	f, err := config.Load(filepath.Join(dir, "swarm.yaml"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	f.Model = "" // each visit's model is the runtime's: its own script
	var ids []string
	for i, v := range visits {
		m, err := scripted.Load(filepath.Join(dir, v.script))
		if err != nil {
			return ids, err
		}
		st, err := sqlite.Open(ctx, db)
		if err != nil {
			return ids, err
		}
		rt, err := swarm.New(swarm.Config{Store: st, Model: m})
		if err != nil {
			return ids, err
		}
		if err := f.Register(rt); err != nil {
			return ids, err
		}
		fmt.Fprintf(w, "visit %d, a new runtime on the same store: %q\n", i+1, v.input)
		input, _ := json.Marshal(v.input)
		id, err := rt.Start(ctx, "support", input, swarm.WithValues(map[string]any{"user": "alice"}))
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
		demo.Follow(ctx, w, rt, id, 0)
		s, err := rt.Wait(ctx, id)
		if err == nil && s.State != store.Completed {
			err = fmt.Errorf("run %s ended %s: %s", id, s.State, s.Reason)
		}
		if err == nil {
			entries, lerr := st.ListMemories(ctx, "user:alice", store.MemoryFilter{})
			err = lerr
			fmt.Fprintf(w, "  alice's memory bank now holds %d entries:", len(entries))
			for _, e := range entries {
				fmt.Fprintf(w, " %s = %q", e.Key, e.Text)
			}
			fmt.Fprintln(w)
		}
		rt.Close()
		st.Close()
		if err != nil {
			return ids, err
		}
	}
	fmt.Fprintln(w, "the second visit found the preference the first one wrote, and wrote nothing")
	return ids, nil
}
