package swarm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/swarmrt/swarm/inspect"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Request rebuilds the request of the model call that run id journaled
// under key (a model_response record, such as "t2/model", or a delegated
// agent's "t1/h/call_x/t1/model"), exactly as the model received it.
//
// The request is rebuilt, not stored: the runner replays the run's journal
// read-only, as a recovery does, up to that call, and builds its request
// with the code that built the original (runner.request). Storing every
// request would grow the store quadratically with a conversation's length
// (each request repeats the whole history), which is what the journal is
// designed to avoid; and the replay is already what recovery relies on to
// be deterministic: the same journal gives the same histories, compactions
// and instructions. The replay writes nothing and runs nothing: any step
// without a recorded outcome before the call stops it with an error. What
// it cannot reproduce is what the journal does not hold: a changed swarm
// definition (as for recovery) and the tools of dynamic tool sets (MCP
// servers, for example), which are offered as they are now. So the
// journal holds, with each response, a digest of its request (Event's
// RequestHash, 16 bytes), and the rebuilt request is checked against it
// (inspect.Request's Check): whatever is shown is either verified to be what
// was sent or marked as differing.
//
// Errors: the run unknown (store.ErrNotFound), its swarm not registered
// here (ErrUnknownSwarm), a key not in its journal (store.ErrNotFound), a
// key that is not a model response (ErrInvalidInput).
func (rt *Runtime) Request(ctx context.Context, id, key string) (*inspect.Request, error) {
	run, err := rt.store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("request %s of run %s: %w", key, id, err)
	}
	recs, err := rt.store.Read(ctx, id, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("request %s of run %s: %w", key, id, err)
	}
	i := slices.IndexFunc(recs, func(rec store.Record) bool { return rec.Key == key })
	if i < 0 {
		return nil, fmt.Errorf("request %s of run %s: %w", key, id, noStep{})
	}
	if recs[i].Type != string(EventModelResponse) {
		return nil, fmt.Errorf("request %s of run %s: the step is a %s record, not a model call: %w", key, id, recs[i].Type, ErrInvalidInput)
	}
	ev, err := decodeEvent(recs[i])
	if err != nil {
		return nil, fmt.Errorf("request %s of run %s: %w", key, id, err)
	}
	info, err := rt.info(run.Swarm)
	if err != nil {
		return nil, fmt.Errorf("request %s of run %s: %w", key, id, err)
	}
	r := &runner{rt: rt, id: id, info: info, calls: map[string]int{}, noSnap: true}
	started, _, _, err := r.scan(recs)
	if err == nil {
		err = r.rebuild(started)
	}
	if err != nil {
		return nil, fmt.Errorf("request %s of run %s: %w", key, id, err)
	}
	req, err := r.replayTo(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("request %s of run %s: %w", key, id, err)
	}
	if req.Agent != ev.Agent {
		return nil, fmt.Errorf("request %s of run %s: the replay reached a call of %s, the journal has one of %s (the swarm's definition changed?)", key, id, req.Agent, ev.Agent)
	}
	out := &inspect.Request{RunID: id, Key: key, Agent: req.Agent, Call: ev.Call, System: req.System,
		Messages: req.Messages, Tools: req.Tools, ResultSchema: req.ResultSchema, Check: inspect.Unverified}
	if ev.RequestHash != "" {
		out.Check = inspect.Verified
		if inspect.Hash(req) != ev.RequestHash {
			out.Check = inspect.Differs
		}
	}
	if out.Messages == nil {
		out.Messages = []model.Message{}
	}
	if out.Tools == nil {
		out.Tools = []model.ToolDef{}
	}
	out.Tokens = inspect.Count(out)
	if ev.Usage != nil {
		out.Tokens.Reported = ev.Usage.InputTokens
	}
	return out, nil
}

// noStep is the error of a step key not in a run's journal: a kind of
// store.ErrNotFound.
type noStep struct{}

func (noStep) Error() string        { return "the run's journal has no such step" }
func (noStep) Is(target error) bool { return target == store.ErrNotFound }

// errInspected ends the read-only replay of an inspection.
var errInspected = errors.New("inspection replay ended")

// inspection is the state of a read-only replay that rebuilds the request
// of the model call journaled under target.
type inspection struct {
	target string
	// through are the steps the replay must execute again, although
	// recorded, to reach target: the delegations target is nested in.
	// The rest of the journal, target included, stays recorded, so that
	// strategies see a replay.
	through map[string]bool
	cancel  context.CancelCauseFunc

	mu    sync.Mutex
	req   *model.Request
	stray string // the first step the replay could not replay
}

// replayTo drives the run's strategy over its journal, read-only, until it
// reaches the model call of key, and returns that call's request.
func (r *runner) replayTo(ctx context.Context, key string) (*model.Request, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.inspect = &inspection{target: key, through: nestedIn(r.recorded, key), cancel: cancel}
	in := r.inspect
	// A strategy may record what it concludes from a call in an event of
	// its own (strategy.Driver.RecordEvent; the adaptive loop's ledgers) and replay
	// that record instead of the call. Hidden, the records journaled after
	// the call make the strategy ask again, and meet the call.
	if at, ok := r.recorded[key]; ok {
		for k, rec := range r.recorded {
			if rec.Seq > at.Seq && !engineEvents[EventType(rec.Type)] {
				delete(r.recorded, k)
			}
		}
	}
	r.plan.strategy.drive(ctx, r)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.req != nil {
		return in.req, nil
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, errInspected) {
		return nil, err
	}
	if in.stray != "" {
		return nil, fmt.Errorf("the replay met %s, which the journal does not hold, before the call", in.stray)
	}
	return nil, errors.New("the replay ended without reaching the call (the swarm's definition changed?)")
}

// inspecting reports whether the runner replays to rebuild the request
// of the model call journaled under key. Everything else the replay meets
// is what it was in the run; that call was made, but its request must be
// built again.
func (r *runner) inspecting(key string) bool {
	return r.inspect != nil && r.inspect.target == key
}

// nestedIn returns the delegations (their tool step keys) whose agent's
// steps key is nested in, at any depth.
func nestedIn(recorded map[string]store.Record, key string) map[string]bool {
	through := map[string]bool{}
	for todo := []string{key}; len(todo) > 0; todo = todo[1:] {
		for k := range recorded {
			i := strings.LastIndex(k, "/tool/")
			if i < 0 || through[k] {
				continue
			}
			if strings.HasPrefix(todo[0], nestedPath(k[:i], k[i+len("/tool/"):])) {
				through[k] = true
				todo = append(todo, k)
			}
		}
	}
	return through
}

// reached is the model call of ap under key in the replay, the inspected
// one or one the journal does not hold: the inspected call's request is
// kept; any other call ends the replay.
func (in *inspection) reached(ctx context.Context, r *runner, ap *agentPlan, key string, msgs []model.Message) error {
	if key != in.target {
		return in.strayed(ctx, "the model call "+key)
	}
	req := r.request(ctx, ap, 0, slices.Clone(msgs))
	in.mu.Lock()
	if in.req == nil {
		in.req = req
	}
	in.mu.Unlock()
	in.cancel(errInspected)
	return context.Cause(ctx)
}

// strayed notes that the replay met what, which it must not execute, and
// ends the replay.
func (in *inspection) strayed(ctx context.Context, what string) error {
	in.mu.Lock()
	if in.stray == "" && in.req == nil {
		in.stray = what
	}
	in.mu.Unlock()
	in.cancel(errInspected)
	return context.Cause(ctx)
}

// requestHash is the digest journaled with a model response (see
// inspect.Hash).
var requestHash = inspect.Hash
