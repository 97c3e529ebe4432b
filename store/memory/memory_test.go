package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
}

func TestOpenURL(t *testing.T) {
	s, err := store.Open(t.Context(), "memory:")
	if err != nil {
		t.Fatalf("Open(memory:): %v", err)
	}
	if _, ok := s.(*memory.Store); !ok {
		t.Fatalf("Open(memory:) returned %T", s)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestClosed(t *testing.T) {
	s := memory.New()
	ctx := t.Context()
	l, err := s.Create(ctx, store.Run{ID: "r"}, "o", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Append(ctx, l, nil, store.Update{}); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := s.Create(ctx, store.Run{ID: "r2"}, "o", time.Hour, nil); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("Create after Close: %v", err)
	}
}

// TestCancelledContext: a write with a cancelled context fails with the
// context's error (the conformance suite's BadInput covers invalid
// arguments).
func TestCancelledContext(t *testing.T) {
	s := memory.New()
	ctx := t.Context()
	l, err := s.Create(ctx, store.Run{ID: "r"}, "o", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Append(cctx, l, nil, store.Update{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled context: %v", err)
	}
}

var payload = json.RawMessage(`{"role":"assistant","content":"hello there, this is a small message"}`)

// round appends what one orchestrator round writes: a few small records
// over several appends.
func round(ctx context.Context, s store.Store, l store.Lease, turn int) error {
	k := fmt.Sprint(turn)
	now := time.Now()
	if _, err := s.Append(ctx, l, []store.Record{{Key: "t" + k + "/start", Type: "turn.start", Data: payload, Time: now}}, store.Update{Turn: turn}); err != nil {
		return err
	}
	if _, err := s.Append(ctx, l, []store.Record{
		{Key: "t" + k + "/model", Type: "model.response", Data: payload, Time: now},
		{Key: "t" + k + "/tool", Type: "tool.call", Data: payload, Time: now},
	}, store.Update{}); err != nil {
		return err
	}
	_, err := s.Append(ctx, l, []store.Record{{Key: "t" + k + "/end", Type: "turn.end", Data: payload, Time: now}}, store.Update{})
	return err
}

func BenchmarkRound(b *testing.B) {
	s := memory.New()
	ctx := context.Background()
	l, err := s.Create(ctx, store.Run{ID: "r"}, "o", time.Hour, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	turn := 0
	for b.Loop() {
		turn++
		if turn%100 == 0 {
			// A realistic run has tens or hundreds of turns, not millions.
			if l, err = s.Create(ctx, store.Run{ID: strconv.Itoa(turn)}, "o", time.Hour, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := round(ctx, s, l, turn); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	s := memory.New()
	ctx := context.Background()
	l, err := s.Create(ctx, store.Run{ID: "r"}, "o", time.Hour, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	now := time.Now()
	for b.Loop() {
		k := strconv.Itoa(i)
		i++
		rs := []store.Record{
			{Key: k + "a", Type: "a", Data: payload, Time: now},
			{Key: k + "b", Type: "a", Data: payload, Time: now},
			{Key: k + "c", Type: "a", Data: payload, Time: now},
			{Key: k + "d", Type: "a", Data: payload, Time: now},
		}
		if _, err := s.Append(ctx, l, rs, store.Update{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkManyRuns creates and finishes 10,000 runs concurrently.
func BenchmarkManyRuns(b *testing.B) {
	const runs = 10000
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s := memory.New()
		var failed atomic.Value
		done := make(chan struct{}, runs)
		for i := range runs {
			go func() {
				defer func() { done <- struct{}{} }()
				id := fmt.Sprintf("run-%d", i)
				l, err := s.Create(ctx, store.Run{ID: id, Swarm: "s"}, "o", time.Minute,
					[]store.Record{{Key: "start", Type: "run.start", Data: payload}})
				if err == nil {
					_, err = s.Append(ctx, l, []store.Record{{Key: "end", Type: "run.end", Data: payload}},
						store.Update{State: store.Completed, Result: payload})
				}
				if err != nil {
					failed.Store(err)
				}
			}()
		}
		for range runs {
			<-done
		}
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTaskBoard: four adders fill one board, then four claimers race
// to claim its tasks.
func BenchmarkTaskBoard(b *testing.B) {
	storetest.BenchmarkTaskBoard(b, []store.Store{memory.New()})
}
