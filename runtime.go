package swarm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/registry"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

// Errors returned by the runtime. They are wrapped with %w; test with
// errors.Is.
var (
	// ErrUnknownSwarm: no swarm with that id is registered.
	ErrUnknownSwarm = errors.New("unknown swarm")
	// ErrUnknownAgent: a handoff names an agent that is not registered.
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrDuplicate: two swarms, agents or tools share a name.
	ErrDuplicate = errors.New("duplicate name")
	// ErrInvalid: a definition is malformed.
	ErrInvalid = errors.New("invalid definition")
	// ErrInvalidInput: a run's input does not match its swarm's input type.
	ErrInvalidInput = errors.New("invalid input")
	// ErrNoModel: no model is configured for an agent.
	ErrNoModel = errors.New("no model configured")
	// ErrNotFound: no run with that id.
	ErrNotFound = store.ErrNotFound
	// ErrInvalidState: the operation is not allowed in the run's state
	// (resuming a run that is not paused, stopping a finished run).
	ErrInvalidState = store.ErrInvalidState
	// ErrPauseNotCurrent: a resume named a pause ([AtPause]) at which the
	// run no longer waits: another answer came first, the run has paused
	// again since, or it has finished. Nothing was applied. It wraps
	// ErrInvalidState.
	ErrPauseNotCurrent = store.ErrPauseNotCurrent
	// ErrClosed: the runtime has been closed.
	ErrClosed = errors.New("runtime closed")
)

// Config configures a Runtime. The zero value is usable: an in-memory store
// and no default model (every agent then needs a model spec).
type Config struct {
	// Store keeps runs and journals (default: a new in-memory store).
	Store store.Store
	// Model is the default model of agents and swarms that name none.
	Model model.Model
	// ModelSpec names Model ("openai:gpt-4.1-mini"); it is used to price
	// the default model's usage from the price table (see model.LookupPrice).
	ModelSpec string
	// OpenModel resolves model specs named by agents and swarms (default:
	// model.Open). Results are cached per spec.
	OpenModel func(spec string) (model.Model, error)
	// Owner names this process in leases (default: host:pid:random).
	Owner string
	// Lease is how long a claim lasts without renewal; a run whose owner
	// died is taken over once it expires (default 30s). Leases are renewed
	// every Lease/3.
	Lease time.Duration
	// PollInterval is how often waits and event streams look at the store
	// for changes made by other processes (default 250ms).
	PollInterval time.Duration
	// ModelRetries is how many times a retryable model failure (rate limit,
	// server error, timeout, connection) is retried (default 3; -1: never).
	ModelRetries int
	// RetryBackoff is the first retry's delay, doubled at each attempt with
	// jitter (default 500ms).
	RetryBackoff time.Duration
	// ModelTimeout bounds each model call (default 5m).
	ModelTimeout time.Duration
	// MaxDepth bounds how deep handoffs may nest (default 8). Agent
	// handoffs and swarm handoffs count together: an agent an orchestrator
	// hands off to is at depth 1, a child swarm it starts at depth 2, and
	// so on. A handoff that would go deeper gets an error result naming
	// the limit instead. Depth does not bound cost (each level keeps its
	// own max turns): MaxModelCalls and MaxToolCalls end a cycle of
	// handoffs (an agent handing off to itself, or two agents to each
	// other).
	MaxDepth int
	// MaxModelCalls bounds the model calls of every run tree whose budget
	// sets no ModelCalls (see Budget), counted over the whole tree: every
	// agent, turn, retry and child run. Reaching it fails the tree with a
	// reason naming the limit. A conversation's or a team's tree counts
	// them per piece of outside work instead (each user message, each
	// user's mail or task), and pauses when it reaches the limit, for a
	// resume to give it as many again (Budget.PerWork). Default
	// DefaultMaxModelCalls; negative: no limit.
	MaxModelCalls int64
	// MaxToolCalls is MaxModelCalls for tool executions (default
	// DefaultMaxToolCalls; negative: no limit).
	MaxToolCalls int64
	// MaxParallel bounds how many tool calls and handoffs of one model
	// response, and how many branches of one strategy's Parallel (a
	// workflow's parallel step, for-each or fork without a limit of its
	// own), run at once (default 16).
	MaxParallel int
	// Hooks observe every agent of every run of this runtime.
	Hooks Hooks
	// Logger receives operational messages (default: discard).
	Logger *slog.Logger
	// TracerProvider, when set, traces runs with spans after the
	// OpenTelemetry GenAI conventions (see package telemetry, which
	// configures it from the standard OTEL_* environment variables).
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, records the GenAI client metrics (token
	// usage, operation duration) and runs by state.
	MeterProvider metric.MeterProvider
	// CaptureContent puts message content (system instructions, input and
	// output messages, tool arguments and results) on spans. Off by
	// default: content may be sensitive.
	CaptureContent bool
	// SnapshotEvery is how many journal records a run may add before its
	// state is snapshotted again (default 500; negative: never), so that
	// recovering a run reads its newest snapshot and the records after it
	// rather than its whole journal. Only stores that implement
	// store.Snapshots keep them.
	SnapshotEvery int
	// Engine, when set, runs the runs of some swarms on another durable
	// engine than this runtime's own: package temporal's, made by
	// temporal.NewHook (a value of another module, hence the internal
	// type). Start, Resume, Stop and Say hand those runs to it, which
	// mirrors their records into Store, so that Status, Wait, Events and
	// every reader of the store (swarm serve, the dashboard) see them as
	// any run. This runtime never drives a run of a tree whose root run's
	// swarm the engine runs, and refuses to fork one.
	Engine seam.Engine
}

// Runtime registers swarms and agents and drives their runs. It is safe for
// concurrent use.
type Runtime struct {
	cfg   Config
	store store.Store
	owner string
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.RWMutex
	defs   map[string]Definition
	infos  map[string]*defInfo
	agents map[string]*Agent
	tools  map[string]Tool
	models map[string]model.Model
	active map[string]*driver
	// drivenTrees counts the runs this runtime drives per run tree (by
	// root run id), so that the runs of a tree that work at once reserve
	// smaller blocks of its call limits (see runner.take).
	drivenTrees map[string]int
	closed      bool
	hbOn        bool

	notes   notifier
	live    hub
	catalog *registry.Registry
	tmpls   sync.Map // instructions -> *template.Template
	schemas sync.Map // tool schema text -> *jsonschema.Resolved

	work workState // multi-node work and metrics (worker.go)
	// memberVals caches values of team members' start records.
	memberVals sync.Map

	tel *tel // OpenTelemetry; nil when off (telemetry_hooks.go)
}

// driver is one run being executed by this runtime.
type driver struct {
	lease  store.Lease
	cancel context.CancelCauseFunc
	done   chan struct{}
	// inModel counts the run's model calls in flight; Work's drain
	// interrupts a run at once while it waits for a model.
	inModel atomic.Int32
}

// New makes a runtime.
func New(cfg Config) (*Runtime, error) {
	if cfg.Store == nil {
		cfg.Store = memory.New()
	}
	if cfg.OpenModel == nil {
		cfg.OpenModel = model.Open
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.ModelRetries == 0 {
		cfg.ModelRetries = 3
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 500 * time.Millisecond
	}
	if cfg.ModelTimeout <= 0 {
		cfg.ModelTimeout = 5 * time.Minute
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = 8
	}
	if cfg.MaxModelCalls == 0 {
		cfg.MaxModelCalls = DefaultMaxModelCalls
	}
	if cfg.MaxToolCalls == 0 {
		cfg.MaxToolCalls = DefaultMaxToolCalls
	}
	if cfg.SnapshotEvery == 0 {
		cfg.SnapshotEvery = 500
	}
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = 16
	}
	if cfg.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		cfg.Owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rt := &Runtime{
		cfg: cfg, store: cfg.Store, owner: cfg.Owner, log: log,
		ctx: ctx, cancel: cancel,
		defs: map[string]Definition{}, infos: map[string]*defInfo{},
		agents: map[string]*Agent{}, models: map[string]model.Model{},
		active: map[string]*driver{}, drivenTrees: map[string]int{}, catalog: registry.New(),
	}
	var err error
	if rt.tel, err = newTel(cfg); err != nil {
		cancel()
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if err := rt.subscribe(); err != nil {
		cancel()
		return nil, err
	}
	if cfg.Engine != nil {
		if err := cfg.Engine.Bind(rt); err != nil {
			cancel()
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	return rt, nil
}

// Store returns the runtime's store.
func (rt *Runtime) Store() store.Store { return rt.store }

// Owner returns the name this runtime uses in leases.
func (rt *Runtime) Owner() string { return rt.owner }

// Register adds swarm definitions. A run can only be driven (started,
// resumed or recovered) by a runtime that has its swarm registered.
func (rt *Runtime) Register(defs ...Definition) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, d := range defs {
		if d == nil {
			return fmt.Errorf("%w: nil swarm", ErrInvalid)
		}
		info := d.def()
		if info.err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, info.err)
		}
		if _, dup := rt.defs[info.id]; dup {
			return fmt.Errorf("%w: swarm %q registered twice", ErrDuplicate, info.id)
		}
		rt.defs[info.id] = d
		rt.infos[info.id] = info
		if err := rt.catalog.Put(rt.entryOf(d, info)); err != nil {
			return fmt.Errorf("%w: swarm %s: %w", ErrInvalid, info.id, err)
		}
	}
	return nil
}

// RegisterAgent adds agents that handoffs can name by id ([ToAgentID]).
func (rt *Runtime) RegisterAgent(agents ...*Agent) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, a := range agents {
		if a == nil {
			return fmt.Errorf("%w: nil agent", ErrInvalid)
		}
		if err := checkName(a.Name); err != nil {
			return fmt.Errorf("%w: agent: %w", ErrInvalid, err)
		}
		if _, dup := rt.agents[a.Name]; dup {
			return fmt.Errorf("%w: agent %q registered twice", ErrDuplicate, a.Name)
		}
		p := &plan{}
		if err := rt.claimAgents(p, a, "the registered agent "+a.Name); err != nil {
			return err
		}
		rt.agents[a.Name] = a
		if _, taken := rt.defs[a.Name]; !taken {
			_ = rt.catalog.Put(agentEntry(a))
		}
	}
	return nil
}

// claimAgents claims agent a and the agents its handoffs reach for plan p
// (see plan.claim), so that registering an agent whose handoffs reach two
// different agents of one name fails at once rather than when a run
// starts. rt.mu is held.
func (rt *Runtime) claimAgents(p *plan, a *Agent, place string) error {
	if _, seen := p.srcs[a.Name]; seen {
		return p.claim(a, place)
	}
	if err := p.claim(a, place); err != nil {
		return err
	}
	for _, h := range a.Handoffs {
		t, where := h.agent, "the handoffs of "+a.Name
		if t == nil && !h.isSwarm {
			t, where = rt.agents[h.id], where+" (the registered agent)"
		}
		if t == nil {
			continue
		}
		if err := rt.claimAgents(p, t, where); err != nil {
			return err
		}
	}
	return nil
}

// Swarms returns the registered swarm definitions.
func (rt *Runtime) Swarms() []Definition {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	out := make([]Definition, 0, len(rt.defs))
	for _, d := range rt.defs {
		out = append(out, d)
	}
	return out
}

// Agents returns the registered agents.
func (rt *Runtime) Agents() []*Agent {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	out := make([]*Agent, 0, len(rt.agents))
	for _, a := range rt.agents {
		out = append(out, a)
	}
	return out
}

func (rt *Runtime) info(id string) (*defInfo, error) {
	rt.mu.RLock()
	d, ok := rt.infos[id]
	rt.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownSwarm, id)
	}
	return d, nil
}

func (rt *Runtime) agent(id string) (*Agent, bool) {
	rt.mu.RLock()
	a, ok := rt.agents[id]
	rt.mu.RUnlock()
	return a, ok
}

func (rt *Runtime) model(spec string) (model.Model, error) {
	if spec == "" {
		if rt.cfg.Model == nil {
			return nil, fmt.Errorf("%w: set a default model or a model spec on the agent", ErrNoModel)
		}
		return rt.cfg.Model, nil
	}
	rt.mu.RLock()
	m, ok := rt.models[spec]
	rt.mu.RUnlock()
	if ok {
		return m, nil
	}
	m, err := rt.cfg.OpenModel(spec)
	if err != nil {
		return nil, err
	}
	rt.mu.Lock()
	if prev, ok := rt.models[spec]; ok {
		m = prev
	} else {
		rt.models[spec] = m
	}
	rt.mu.Unlock()
	return m, nil
}

// StartOption configures a run at its start.
type StartOption func(*startConfig)

type startConfig struct {
	id      string
	values  map[string]any
	params  *Params
	budget  *Budget
	created *bool
	parts   []model.Part
}

// WithID gives the run a caller-chosen id. Starting again with the same id
// and swarm returns the existing run instead of a new one, which makes a
// start idempotent.
func WithID(id string) StartOption { return func(c *startConfig) { c.id = id } }

// WithCreated makes Start set *created to whether it created the run, as
// opposed to finding an existing run of the swarm with the id given by
// WithID. It is decided by the store's insert, so of concurrent starts
// with one id exactly one sees true.
func WithCreated(created *bool) StartOption { return func(c *startConfig) { c.created = created } }

// WithValues sets the run's values: the data its instruction templates are
// rendered against.
func WithValues(v map[string]any) StartOption { return func(c *startConfig) { c.values = v } }

// Start begins a run of the registered swarm with a JSON input and returns
// its id at once; the run proceeds in the background (fire and retrieve).
// The input is validated and the swarm's spec computed before anything is
// stored, so a bad input or definition returns an error and creates nothing.
func (rt *Runtime) Start(ctx context.Context, swarmID string, input json.RawMessage, opts ...StartOption) (string, error) {
	var sc startConfig
	for _, o := range opts {
		o(&sc)
	}
	info, err := rt.info(swarmID)
	if err != nil {
		return "", err
	}
	id := sc.id
	if id == "" {
		id = newID()
	} else if err := checkRunID(id); err != nil {
		return "", err
	}
	if err := checkParts(sc.parts); err != nil {
		return "", fmt.Errorf("swarm %s: %w", swarmID, err)
	}
	if info.inParts {
		in, parts, err := rt.inputParts(input)
		if err != nil {
			return "", fmt.Errorf("swarm %s: %w", swarmID, err)
		}
		input, sc.parts = in, append(parts, sc.parts...)
	}
	if e := rt.cfg.Engine; e != nil && e.Runs(swarmID) {
		return rt.startOnEngine(ctx, e, info, id, input, sc)
	}
	nr := newRun{info: info, input: input, id: id, explicitID: sc.id != "", values: sc.values, params: recordParams(sc.params), budget: sc.budget, parts: sc.parts, newTree: true}
	if nr.budget != nil && nr.budget.WallTime > 0 {
		nr.deadline = time.Now().Add(nr.budget.WallTime)
	}
	created, err := rt.create(ctx, nr)
	if err != nil {
		return "", err
	}
	if sc.created != nil {
		*sc.created = created
	}
	return id, nil
}

// newRun is everything a run starts with.
type newRun struct {
	info       *defInfo
	input      json.RawMessage
	id         string
	explicitID bool
	values     map[string]any
	parent     string
	depth      int
	params     *paramsRecord
	cust       *Customization
	budget     *Budget
	root       string // the run holding the tree's budget pool (a child's)
	deadline   time.Time
	parts      []model.Part // attached to the input
	// plan, when set, is the run's plan, already built from the fields
	// above.
	plan *plan
	// held, when set, gets the function that starts driving the run,
	// for the caller to call, instead of the run being driven at once.
	held *[]func()
	// newTree: the run is a new tree's root, and budget the budget it
	// was started with (nil: none), which create completes with the
	// runtime's limits once it knows the run's strategy (treeBudget).
	newTree bool
	// owner, when set, is another engine's, which drives the run: the
	// run is created leased to it for good (see remote.go) and not
	// driven here.
	owner string
}

// buildPlan computes a run's spec from its input, applies its params and
// customization, and resolves it.
func (rt *Runtime) buildPlan(info *defInfo, input json.RawMessage, values map[string]any, pr *paramsRecord, cust *Customization) (*plan, error) {
	spec, err := info.spec(input)
	if err != nil {
		return nil, err
	}
	if spec, err = rt.applyParams(spec, pr); err != nil {
		return nil, fmt.Errorf("swarm %s: %w", info.id, err)
	}
	if spec, err = rt.applyCustomization(spec, cust); err != nil {
		return nil, fmt.Errorf("%w: swarm %s: %w", errCustomization, info.id, err)
	}
	return rt.plan(info, spec, input, values)
}

var errCustomization = errors.New("invalid customization")

// create stores a new run and drives it here. With an explicit id that is
// taken by a run of the same swarm it returns (false, nil): the run exists.
func (rt *Runtime) create(ctx context.Context, nr newRun) (bool, error) {
	info := nr.info
	if len(nr.input) == 0 {
		nr.input = json.RawMessage(`null`)
	}
	if !json.Valid(nr.input) {
		return false, fmt.Errorf("%w: swarm %s: input is not valid JSON", ErrInvalidInput, info.id)
	}
	plan := nr.plan
	if plan == nil {
		var err error
		if plan, err = rt.buildPlan(info, nr.input, nr.values, nr.params, nr.cust); err != nil {
			return false, err
		}
	}
	rt.mu.RLock()
	closed := rt.closed
	rt.mu.RUnlock()
	if closed {
		return false, ErrClosed
	}
	if nr.newTree {
		nr.budget = rt.treeBudget(nr.budget, plan.longLived())
	}
	if nr.budget == nil {
		nr.root = ""
	}
	now := time.Now()
	span, tp := rt.tel.startRunSpan(ctx, info, plan, nr.id)
	ev := Event{Swarm: info.id, Input: nr.input, Values: nr.values, MaxTurns: plan.root.maxTurns, Agent: info.id,
		Parent: nr.parent, Depth: nr.depth, Params: nr.params, Customization: nr.cust, Budget: nr.budget, Root: nr.root, Deadline: nr.deadline, Trace: tp,
		Parts: rt.refParts(nr.parts), Instance: newInstance()}
	data, err := json.Marshal(&ev)
	if err != nil {
		return false, fmt.Errorf("swarm %s: encode input: %w", info.id, err)
	}
	rec := store.Record{Key: "start", Type: string(EventStarted), Data: data, Time: now}
	row := store.Run{ID: nr.id, Swarm: info.id, Parent: nr.parent, MaxTurns: plan.root.maxTurns, Agent: info.id, Blobs: rt.runBlobs(nr.parts)}
	recs := []store.Record{rec}
	var (
		lease store.Lease
		pool  store.Pool
	)
	first := nr.budget.firstBlock()
	owner, leaseFor := rt.owner, rt.cfg.Lease
	if nr.owner != "" {
		owner, leaseFor, first = nr.owner, seam.HeldLease, store.Pool{}
	}
	if rs, ok := rt.store.(store.Reserver); ok && nr.root == "" && first != (store.Pool{}) {
		// A new tree's root takes its first block of calls as it is
		// created: one transaction fewer before its first model call.
		lease, pool, err = rs.CreateReserving(ctx, row, owner, leaseFor, recs, first)
	} else {
		first = store.Pool{}
		lease, err = rt.store.Create(ctx, row, owner, leaseFor, recs)
	}
	if errors.Is(err, store.ErrExists) && nr.explicitID {
		existing, gerr := rt.store.Get(ctx, nr.id)
		if gerr != nil {
			return false, gerr
		}
		if existing.Swarm != info.id {
			return false, fmt.Errorf("run %s exists and belongs to swarm %s: %w", nr.id, existing.Swarm, store.ErrExists)
		}
		return false, nil
	}
	if err != nil {
		if span != nil {
			span.End()
		}
		return false, fmt.Errorf("start %s: %w", info.id, err)
	}
	rt.notes.notify(nr.id)
	if nr.owner != "" {
		if span != nil {
			span.End()
		}
		return true, nil
	}
	r := &runner{rt: rt, id: nr.id, info: info, plan: plan, fresh: true, input: nr.input, parts: ev.Parts, span: span, trace: tp, instance: ev.Instance,
		recorded: map[string]store.Record{}, depth: nr.depth, budget: nr.budget, root: nr.root, deadline: nr.deadline,
		pool: pool, grants: [2]int64{first.Calls, first.Tools}}
	r.seq.Store(1) // the start record
	if r.root == "" {
		r.root = nr.id
	}
	if nr.held != nil {
		*nr.held = append(*nr.held, func() { rt.launch(lease, r) })
		return true, nil
	}
	rt.launch(lease, r)
	return true, nil
}

func checkRunID(id string) error { return checkID("run", id) }

// checkID checks a client's id of a what (run, mail): at most 200
// characters, none of them spaces or control characters.
func checkID(what, id string) error {
	if len(id) > 200 {
		return fmt.Errorf("%w: %s id longer than 200 characters", ErrInvalidInput, what)
	}
	for _, r := range id {
		if r < 0x21 || r == 0x7f {
			return fmt.Errorf("%w: %s id %q contains spaces or control characters", ErrInvalidInput, what, id)
		}
	}
	return nil
}

// newInstance returns a new run's Event.Instance.
func newInstance() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "run_" + hex.EncodeToString(b[:])
}

// launch drives a claimed run on a new goroutine.
func (rt *Runtime) launch(lease store.Lease, r *runner) {
	ctx, cancel := context.WithCancelCause(rt.ctx)
	d := &driver{lease: lease, cancel: cancel, done: make(chan struct{})}
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		cancel(ErrClosed)
		_ = rt.store.Release(context.Background(), lease)
		return
	}
	if prev, ok := rt.active[lease.RunID]; ok {
		// A lease of epoch 1 is a creation's, here: the run is new (its
		// id was a deleted run's), and prev drives the deleted run.
		if prev.lease.Epoch > lease.Epoch && lease.Epoch > 1 {
			// This claim is older than the one driving the run here
			// (two claims raced and launched out of order): it is stale.
			rt.mu.Unlock()
			cancel(store.ErrLeaseLost)
			return
		}
		// A newer claim of a run this runtime already drives: the old
		// driver's lease is stale.
		prev.cancel(store.ErrLeaseLost)
	}
	rt.active[lease.RunID] = d
	// A run claimed for recovery learns its root when it loads; until
	// then it counts for its own tree, as its first reservation assumes.
	tree := r.root
	rt.drivenTrees[tree]++
	if !rt.hbOn {
		rt.hbOn = true
		rt.wg.Add(1)
		go rt.heartbeat()
	}
	rt.wg.Add(1)
	rt.mu.Unlock()
	r.lease, r.claimed = lease, time.Now()
	go func() {
		defer rt.wg.Done()
		defer close(d.done)
		defer cancel(nil)
		if err := r.drive(ctx); errors.Is(err, store.ErrLeaseLost) || errors.Is(context.Cause(ctx), store.ErrLeaseLost) {
			rt.work.lost.Add(1)
		}
		rt.mu.Lock()
		if rt.active[lease.RunID] == d {
			delete(rt.active, lease.RunID)
		}
		if rt.drivenTrees[tree]--; rt.drivenTrees[tree] <= 0 {
			delete(rt.drivenTrees, tree)
		}
		rt.mu.Unlock()
		rt.notes.notify(lease.RunID)
		rt.pokeWorker() // a slot is free
	}()
}

// heartbeat renews this runtime's leases and delivers inbox messages to runs
// owned here, until the runtime closes.
func (rt *Runtime) heartbeat() {
	defer rt.wg.Done()
	t := time.NewTicker(rt.cfg.Lease / 3)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-rt.ctx.Done():
			return
		case <-t.C:
		}
		ren, err := rt.renew()
		if err != nil && time.Since(lastOK) > rt.cfg.Lease && rt.ctx.Err() == nil {
			// One more try before giving every run up: a renewal that
			// timed out while the process was frozen (SIGSTOP, a long GC
			// pause, a suspended VM) may succeed now, and the runs no
			// other node claimed meanwhile are still this one's.
			ren, err = rt.renew()
		}
		if err != nil {
			rt.log.Warn("lease renewal failed", "owner", rt.owner, "err", err)
			if time.Since(lastOK) > rt.cfg.Lease {
				rt.cancelAll(store.ErrLeaseLost)
			}
			continue
		}
		lastOK = time.Now()
		rt.work.renewals.Add(1)
		held := make(map[string]bool, len(ren.Held))
		for _, id := range ren.Held {
			held[id] = true
		}
		rt.mu.RLock()
		var lost []*driver
		for id, d := range rt.active {
			if !held[id] {
				lost = append(lost, d)
			}
		}
		rt.mu.RUnlock()
		for _, d := range lost {
			// A run created or finished during the renewal may be missing
			// from its list; only a changed owner or epoch means the lease
			// is lost. (The store's epoch check fences writes regardless.)
			r, err := rt.store.Get(rt.ctx, d.lease.RunID)
			if err == nil && (r.Owner != rt.owner || r.Epoch != d.lease.Epoch) && r.State == store.Running {
				d.cancel(store.ErrLeaseLost)
			}
		}
		rt.adoptOrphans(ren.Held)
		for _, id := range ren.Pending {
			rt.checkInbox(id)
		}
	}
}

// renew renews this runtime's leases, waiting at most a third of a lease.
func (rt *Runtime) renew() (store.Renewal, error) {
	ctx, cancel := context.WithTimeout(rt.ctx, rt.cfg.Lease/3)
	defer cancel()
	return rt.store.Renew(ctx, rt.owner, rt.cfg.Lease)
}

// checkInbox stops a locally driven run whose inbox holds a stop.
func (rt *Runtime) checkInbox(id string) {
	msgs, err := rt.store.Inbox(rt.ctx, id)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if m.Kind == store.MsgStop {
			rt.mu.RLock()
			d := rt.active[id]
			rt.mu.RUnlock()
			if d != nil {
				d.cancel(&stopCause{reason: m.Text, msg: m.ID})
			}
			return
		}
	}
}

func (rt *Runtime) cancelAll(cause error) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	for _, d := range rt.active {
		d.cancel(cause)
	}
}

// stopCause cancels a run that was stopped from outside.
type stopCause struct {
	reason string
	msg    int64
}

func (s *stopCause) Error() string { return "stopped: " + s.reason }

// Status returns the current status of a run.
func (rt *Runtime) Status(ctx context.Context, id string) (Status, error) {
	r, err := rt.store.Get(ctx, id)
	if err != nil {
		return Status{}, fmt.Errorf("status of %s: %w", id, err)
	}
	s := statusOf(r)
	if s.State == StatePaused {
		if p, ok := rt.lastPause(ctx, id, r.LastSeq); ok {
			s.Context, s.Waiting = p.Context, p.Waiting
		}
	}
	if s.State == StateCompleted {
		parts, err := rt.resultPartsOf(ctx, id, r.LastSeq)
		if err != nil {
			return Status{}, fmt.Errorf("status of %s: %w", id, err)
		}
		s.Parts = parts
	}
	if s.Parent != "" {
		if recs, err := rt.store.Read(ctx, id, 0, 1); err == nil && len(recs) == 1 {
			if ev, err := decodeEvent(recs[0]); err == nil {
				s.Depth, s.Customization = ev.Depth, ev.Customization
			}
		}
	}
	return s, nil
}

// List returns runs matching f, newest first.
func (rt *Runtime) List(ctx context.Context, f store.Filter) ([]Status, error) {
	runs, err := rt.store.List(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := make([]Status, len(runs))
	for i, r := range runs {
		out[i] = statusOf(r)
	}
	return out, nil
}

// Wait blocks until the run is paused or finished (or ctx ends) and returns
// its status. A run driven by another process is observed by polling.
func (rt *Runtime) Wait(ctx context.Context, id string) (Status, error) {
	for {
		// A run driven here is waited for without asking the store; its
		// driver exits when it pauses or ends (or loses its lease).
		rt.mu.RLock()
		d := rt.active[id]
		rt.mu.RUnlock()
		if d != nil {
			select {
			case <-d.done:
			case <-ctx.Done():
				return Status{}, ctx.Err()
			}
		}
		w := rt.notes.wait(id)
		s, err := rt.Status(ctx, id)
		if err != nil || s.State != StateRunning {
			rt.notes.done(id, w)
			return s, err
		}
		if err := rt.nap(ctx, id, w); err != nil {
			return s, err
		}
	}
}

// nap waits for the change of run id that w watches for, at most
// Config.PollInterval (changes made by other processes are seen by
// polling) or until ctx ends, then withdraws w and returns ctx's error.
func (rt *Runtime) nap(ctx context.Context, id string, w *watch) error {
	t := time.NewTimer(rt.cfg.PollInterval)
	select {
	case <-w.ch:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	rt.notes.done(id, w)
	return ctx.Err()
}

// ResumeOption configures [Runtime.Resume].
type ResumeOption func(*resumeConfig)

type resumeConfig struct {
	pause int64
	parts []model.Part
}

// ResumeParts attaches parts (images, files, audio) to a resume's
// message, as [WithMessageParts] does for Say: checked, their large bytes
// kept once as blobs of the run, and journaled by reference with the
// answer. A conversation and a team's lead give them to the model with
// the user's message, an agent that called the pause tool with the
// pause's result; other strategies see them with strategy.Driver.AwaitParts.
// When the pause is a child run's question (Status.Waiting names the
// child), the parts go down with the answer: the child refers to their
// blobs, not copied, and journals them on its resumed event.
// Bad parts fail the resume with [ErrInvalidInput] and nothing is sent.
func ResumeParts(parts ...model.Part) ResumeOption {
	return func(c *resumeConfig) { c.parts = append(c.parts, parts...) }
}

// AtPause makes a resume answer the pause with sequence number seq
// (Status.Pause, Paused.Pause, the paused event's Seq) and nothing else:
// if the run no longer waits at that pause, Resume fails with
// ErrPauseNotCurrent and applies nothing. Of several clients answering the
// same pause, exactly one succeeds.
func AtPause(seq int64) ResumeOption { return func(c *resumeConfig) { c.pause = seq } }

// Resume answers a paused run with message and continues it at once. It
// fails with ErrInvalidState if the run is not paused, and with
// ErrPauseNotCurrent if [AtPause] names a pause the run no longer waits at.
// Without AtPause it answers whatever pause is current.
//
// The run continues in this runtime: by its worker when [Runtime.Work] is
// running (so that the two never claim the run twice), else here; or by
// another node that claims it first. Once the answer is delivered, Resume
// returns nil whoever drives the run.
func (rt *Runtime) Resume(ctx context.Context, id, message string, opts ...ResumeOption) error {
	var rc resumeConfig
	for _, o := range opts {
		o(&rc)
	}
	if rc.pause < 0 {
		return fmt.Errorf("resume %s: %w: pause %d is not a sequence number", id, ErrInvalidInput, rc.pause)
	}
	if e, run, err := rt.engineOf(ctx, id); err != nil {
		return fmt.Errorf("resume %s: %w", id, err)
	} else if e != nil {
		return rt.resumeOnEngine(ctx, e, run, message, rc.pause, rc.parts)
	}
	if err := rt.checkRunParts(ctx, id, rc.parts); err != nil {
		return fmt.Errorf("resume %s: %w", id, err)
	}
	parts, err := rt.storeParts(ctx, id, rc.parts)
	if err != nil {
		return fmt.Errorf("resume %s: store the parts: %w", id, err)
	}
	if _, err := rt.store.Send(ctx, id, store.Message{Kind: store.MsgResume, Text: message, Time: time.Now(), Pause: rc.pause, Parts: parts}); err != nil {
		return fmt.Errorf("resume %s: %w", id, err)
	}
	return rt.wake(ctx, id)
}

// wake continues run id, which a message has just made runnable: by the
// worker when [Runtime.Work] is running (so that the two never claim the
// run twice), else here; or by another node that claims it first.
func (rt *Runtime) wake(ctx context.Context, id string) error {
	if rt.work.running.Load() {
		rt.pokeWorker()
		return nil
	}
	err := rt.Drive(ctx, id)
	if errors.Is(err, store.ErrLeased) || errors.Is(err, store.ErrInvalidState) {
		// Another node claimed the run first, and may have paused or
		// finished it already: the message was delivered all the same.
		return nil
	}
	return err
}

// Stop ends a run with state stopped. A run driven here stops at once; a run
// driven by another live process stops as soon as that process hears of the
// stop: at once when the store is a [store.Watcher] that reports other
// processes' inbox messages (PostgreSQL notifies them, SQLite polls its
// inbox every few tens of milliseconds), else at its next heartbeat. A
// paused run, or one whose owner died, is stopped here. Stopping a finished
// run fails with ErrInvalidState.
func (rt *Runtime) Stop(ctx context.Context, id, reason string) error {
	if e, run, err := rt.engineOf(ctx, id); err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	} else if e != nil {
		return rt.stopOnEngine(ctx, e, run, reason)
	}
	m, err := rt.store.Send(ctx, id, store.Message{Kind: store.MsgStop, Text: reason, Time: time.Now()})
	if err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	rt.mu.RLock()
	d := rt.active[id]
	rt.mu.RUnlock()
	if d != nil {
		d.cancel(&stopCause{reason: reason, msg: m.ID})
		return nil
	}
	lease, err := rt.store.Claim(ctx, id, rt.owner, rt.cfg.Lease)
	if errors.Is(err, store.ErrLeased) || errors.Is(err, store.ErrInvalidState) {
		// Its owner sees the stop at once (store.Watcher) or at its next
		// heartbeat; or it has already ended, perhaps by this stop.
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	swarmID := ""
	if run, err := rt.store.Get(ctx, id); err == nil {
		swarmID = run.Swarm
	}
	r := &runner{rt: rt, id: id, lease: lease, info: &defInfo{id: swarmID}}
	r.spawned.Store(true) // stop whatever runs below it too
	if err := r.finish(ctx, outcome{kind: interrupted, err: &stopCause{reason: reason, msg: m.ID}}); err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	return nil
}

// Drive claims a runnable run (one whose owner released it or died, or that
// was just resumed) and continues it in this runtime. It returns once the
// run is claimed; use Wait for its outcome. A run leased by a live owner
// gives an error wrapping store.ErrLeased.
func (rt *Runtime) Drive(ctx context.Context, id string) error {
	r, err := rt.store.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("drive %s: %w", id, err)
	}
	info, err := rt.info(r.Swarm)
	if err != nil {
		return fmt.Errorf("drive %s: %w", id, err)
	}
	if on, err := rt.onEngine(ctx, r); err != nil {
		return fmt.Errorf("drive %s: %w", id, err)
	} else if on {
		return fmt.Errorf("drive %s: %w", id, errOnEngine)
	}
	lease, err := rt.store.Claim(ctx, id, rt.owner, rt.cfg.Lease)
	if err != nil {
		return fmt.Errorf("drive %s: %w", id, err)
	}
	rt.launch(lease, &runner{rt: rt, id: id, info: info})
	return nil
}

// Recover claims every run whose owner released it or whose lease expired,
// and continues them in this runtime. It returns the ids it claimed. Runs of
// swarms this runtime does not know are released again and skipped.
func (rt *Runtime) Recover(ctx context.Context) ([]string, error) {
	var ids []string
	for {
		leases, err := rt.store.ClaimExpired(ctx, rt.owner, rt.cfg.Lease, 100)
		if err != nil {
			return ids, fmt.Errorf("recover: %w", err)
		}
		if len(leases) == 0 {
			return ids, nil
		}
		unknown := 0
		for _, l := range leases {
			ok, err := rt.adopt(ctx, l)
			if err != nil {
				return ids, err
			}
			if !ok {
				unknown++
				continue
			}
			ids = append(ids, l.RunID)
		}
		if unknown == len(leases) {
			return ids, nil
		}
	}
}

// Close stops driving runs: each is interrupted and its lease released so
// that another process can continue it at once. Runs are not failed or
// stopped; their journals are intact. Close waits for the drivers to exit.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	for _, d := range rt.active {
		d.cancel(ErrClosed)
	}
	rt.mu.Unlock()
	rt.cancel()
	rt.wg.Wait()
	return nil
}

// notifier wakes goroutines waiting for a run to change.
type notifier struct {
	mu sync.Mutex
	m  map[string]*watch
}

type watch struct {
	ch chan struct{}
	n  int
}

// wait registers interest in the next change of run id; the caller must
// call done with the result.
func (n *notifier) wait(id string) *watch {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]*watch{}
	}
	w, ok := n.m[id]
	if !ok {
		w = &watch{ch: make(chan struct{})}
		n.m[id] = w
	}
	w.n++
	return w
}

// done withdraws interest; the last waiter of an unnotified change removes
// it, so finished runs leave nothing behind.
func (n *notifier) done(id string, w *watch) {
	n.mu.Lock()
	w.n--
	if w.n == 0 && n.m[id] == w {
		delete(n.m, id)
	}
	n.mu.Unlock()
}

func (n *notifier) notify(id string) {
	n.mu.Lock()
	w, ok := n.m[id]
	if ok {
		delete(n.m, id)
	}
	n.mu.Unlock()
	if ok {
		close(w.ch)
	}
}
