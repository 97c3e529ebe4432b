// Package cli implements the swarm command. It is internal: the command's
// interface is its flags and output, documented in the README.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"

	// Providers and stores register themselves.
	_ "github.com/swarmrt/swarm/model/scripted"
	_ "github.com/swarmrt/swarm/store/memory"
	_ "github.com/swarmrt/swarm/store/sqlite"
)

// Exit codes.
const (
	ExitCompleted = 0
	ExitFailed    = 1
	ExitUsage     = 2
	ExitPaused    = 3
	ExitStopped   = 4
)

// DefaultStore is the store used when neither --store nor SWARM_STORE is set.
const DefaultStore = "sqlite:.swarm/runs.db"

// usageError marks errors that exit with ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitError carries an exit code chosen by a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

type app struct {
	file, storeURL, modelSpec string
	lease                     time.Duration
	stdout, stderr            io.Writer
	stdin                     io.Reader
	// logger, if set, receives the runtime's warnings (swarm serve).
	logger *slog.Logger
	// storeWait is how long opening the store waits for an unavailable
	// database to come up (swarm serve; other commands fail at once).
	storeWait time.Duration
	// files are the definition files loaded; closed (ending their MCP
	// sessions) when the command is done.
	files []*config.File
}

// Main runs the command with args (without the program name) and returns
// the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr, stdin: stdin}
	root := a.command()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err := root.ExecuteContext(ctx)
	for _, f := range a.files {
		_ = f.Close()
	}
	if err == nil {
		return ExitCompleted
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(stderr, "swarm:", err)
	if errors.Is(err, swarm.ErrNoModel) {
		fmt.Fprintln(stderr, "swarm:", noModelHint)
	}
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, swarm.ErrInvalid) || errors.Is(err, swarm.ErrUnknownSwarm) ||
		errors.Is(err, swarm.ErrUnknownAgent) || errors.Is(err, swarm.ErrDuplicate) || errors.Is(err, swarm.ErrNoModel) ||
		strings.HasPrefix(err.Error(), "unknown command") || strings.Contains(err.Error(), "flag") || strings.Contains(err.Error(), "arg(s)") {
		return ExitUsage
	}
	return ExitFailed
}

func (a *app) command() *cobra.Command {
	root := &cobra.Command{
		Use:           "swarm",
		Short:         "Run and inspect durable multi-agent LLM swarms",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.file, "file", "", "swarm definitions (default: swarm.yaml if it exists)")
	pf.StringVar(&a.storeURL, "store", "", "store URL: sqlite:PATH, postgres://HOST/DB or memory: (default $SWARM_STORE or "+DefaultStore+")")
	pf.StringVar(&a.modelSpec, "model", "", "default model spec, e.g. scripted:script.yaml (default $SWARM_MODEL or the file's model)")
	pf.DurationVar(&a.lease, "lease", 30*time.Second, "lease duration: how long a dead process holds a run")
	root.AddCommand(a.runCmd(), a.statusCmd(), a.lsCmd(), a.eventsCmd(), a.resumeCmd(), a.stopCmd(), a.recoverCmd())
	root.AddCommand(a.serveCmd())
	root.AddCommand(a.mcpCmd())
	root.AddCommand(a.migrateCmd())
	root.AddCommand(a.chatCmd())
	return root
}

// runtime opens the store and, when needDefs, the definitions file.
func (a *app) runtime(ctx context.Context, needDefs bool) (*swarm.Runtime, error) {
	rt, _, err := a.openRuntime(ctx, needDefs)
	return rt, err
}

// openRuntime is runtime that also returns the definitions file (nil
// unless needDefs).
func (a *app) openRuntime(ctx context.Context, needDefs bool) (*swarm.Runtime, *config.File, error) {
	url := a.storeURLOrDefault()
	if err := ensureStoreDir(url); err != nil {
		return nil, nil, err
	}
	st, err := a.openStore(ctx, url)
	if err != nil {
		return nil, nil, usageError{err}
	}
	cfg := swarm.Config{Store: st, Lease: a.lease, Logger: a.logger}
	var file *config.File
	if needDefs {
		path := a.file
		if path == "" {
			if _, err := os.Stat("swarm.yaml"); err == nil {
				path = "swarm.yaml"
			}
		}
		if path == "" {
			st.Close()
			return nil, nil, usageError{errors.New("no swarm definitions: pass --file swarm.yaml (or create swarm.yaml here)")}
		}
		file, err = config.Load(path)
		if err != nil {
			st.Close()
			return nil, nil, usageError{err}
		}
		a.files = append(a.files, file)
	}
	spec := a.modelSpec
	if spec == "" {
		spec = os.Getenv("SWARM_MODEL")
	}
	if spec == "" && file != nil {
		spec = file.Model
	}
	if spec == "" {
		spec = defaultModelSpec()
	}
	if file != nil {
		file.ApplyPrices()
		cfg.OpenModel = file.OpenModel
	}
	if spec != "" {
		m, err := openModelIn(file, spec)
		if err != nil {
			st.Close()
			return nil, nil, usageError{err}
		}
		cfg.Model, cfg.ModelSpec = m, spec
	}
	rt, err := swarm.New(cfg)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	if file != nil {
		if err := file.Register(rt); err != nil {
			rt.Close()
			st.Close()
			return nil, nil, usageError{err}
		}
	}
	return rt, file, nil
}

// openStore opens the store at url, trying again for up to a.storeWait
// while its database is unavailable (starting, restarting, not up yet).
func (a *app) openStore(ctx context.Context, url string) (store.Store, error) {
	deadline := time.Now().Add(a.storeWait)
	pause := 250 * time.Millisecond
	for said := false; ; said = true {
		st, err := store.Open(ctx, url)
		if err == nil || !errors.Is(err, store.ErrUnavailable) || time.Now().Add(pause).After(deadline) {
			return st, err
		}
		if !said {
			fmt.Fprintf(a.stderr, "swarm: waiting up to %s for the store: %v\n", a.storeWait, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (gave up waiting: %w)", err, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// storeURLOrDefault is --store, else $SWARM_STORE, else DefaultStore.
func (a *app) storeURLOrDefault() string {
	url := a.storeURL
	if url == "" {
		url = os.Getenv("SWARM_STORE")
	}
	if url == "" {
		url = DefaultStore
	}
	return url
}

// ensureStoreDir creates the directory of a SQLite store's file.
func ensureStoreDir(url string) error {
	if path, ok := strings.CutPrefix(url, "sqlite:"); ok && path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("store directory: %w", err)
		}
	}
	return nil
}

// withRuntime makes the RunE of a command that works on a runtime: it
// opens one (with the definitions file when needDefs), runs f and closes
// the runtime and its store.
func (a *app) withRuntime(needDefs bool, f func(ctx context.Context, rt *swarm.Runtime, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		rt, err := a.runtime(ctx, needDefs)
		if err != nil {
			return err
		}
		defer closeRuntime(rt)
		return f(ctx, rt, args)
	}
}

// stderrLogger logs text lines on stderr: warnings, and with verbose
// information too.
func (a *app) stderrLogger(verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

func closeRuntime(rt *swarm.Runtime) {
	rt.Close()
	rt.Store().Close()
}

func (a *app) runCmd() *cobra.Command {
	var id string
	var quiet bool
	c := &cobra.Command{
		Use:   "run [flags] SWARM [INPUT]",
		Short: "Start a run and follow it to its end; the result is printed as JSON",
		Long: "Start a run of SWARM on INPUT (text, or JSON for swarms with structured input; read from stdin when INPUT is -),\n" +
			"show its progress on stderr and print its result as JSON on stdout.\n" +
			"Exit codes: completed 0, failed 1, usage or config error 2, paused 3, stopped 4.",
		Args: cobra.RangeArgs(1, 2),
		RunE: a.withRuntime(true, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			input := ""
			if len(args) == 2 {
				input = args[1]
			}
			if input == "-" {
				b, err := io.ReadAll(a.stdin)
				if err != nil {
					return err
				}
				input = strings.TrimRight(string(b), "\n")
			}
			raw, err := inputJSON(rt, args[0], input)
			if err != nil {
				return usageError{err}
			}
			var opts []swarm.StartOption
			if id != "" {
				opts = append(opts, swarm.WithID(id))
			}
			runID, err := rt.Start(ctx, args[0], raw, opts...)
			if err != nil {
				return err
			}
			return a.follow(ctx, rt, runID, 0, quiet)
		}),
	}
	c.Flags().StringVar(&id, "id", "", "run id (default: generated); starting an existing id attaches to it")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	return c
}

// inputJSON turns a command-line input into the swarm's JSON input.
func inputJSON(rt *swarm.Runtime, swarmID, input string) (json.RawMessage, error) {
	for _, d := range rt.Swarms() {
		if d.ID() != swarmID {
			continue
		}
		var sc struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(d.InputSchema(), &sc)
		if sc.Type == "string" {
			return json.Marshal(input)
		}
		if !json.Valid([]byte(input)) {
			return nil, fmt.Errorf("swarm %s takes JSON input matching %s", swarmID, d.InputSchema())
		}
		return json.RawMessage(input), nil
	}
	return nil, fmt.Errorf("%w %q", swarm.ErrUnknownSwarm, swarmID)
}

// follow shows a run's progress (events after seq after) until it pauses or
// ends, prints the outcome and returns the matching exit code.
func (a *app) follow(ctx context.Context, rt *swarm.Runtime, id string, after int64, quiet bool) error {
	fmt.Fprintf(a.stderr, "run %s\n", id)
	if !quiet {
		for ev, err := range rt.Events(ctx, id, after) {
			if err != nil {
				return a.interrupted(ctx, id, err)
			}
			printProgress(a.stderr, ev)
			if ev.Type == swarm.EventPaused {
				if s, err := rt.Status(ctx, id); err == nil && s.State == swarm.StatePaused {
					break
				}
			}
		}
	}
	s, err := rt.Wait(ctx, id)
	if err != nil {
		return a.interrupted(ctx, id, err)
	}
	return a.printOutcome(s)
}

func (a *app) interrupted(ctx context.Context, id string, err error) error {
	if ctx.Err() != nil {
		fmt.Fprintf(a.stderr, "interrupted; continue the run with `swarm recover` (id %s)\n", id)
	}
	return err
}

func (a *app) printOutcome(s swarm.Status) error {
	switch s.State {
	case swarm.StateCompleted:
		fmt.Fprintln(a.stdout, string(s.Result))
		return nil
	case swarm.StatePaused:
		writeJSON(a.stdout, s)
		fmt.Fprintf(a.stderr, "paused: %s\nresume with: swarm resume %s MESSAGE\n", s.Reason, s.ID)
		return exitError{ExitPaused}
	case swarm.StateFailed:
		writeJSON(a.stdout, s)
		fmt.Fprintf(a.stderr, "failed: %s\n", s.Reason)
		return exitError{ExitFailed}
	case swarm.StateStopped:
		writeJSON(a.stdout, s)
		fmt.Fprintf(a.stderr, "stopped: %s\n", s.Reason)
		return exitError{ExitStopped}
	}
	writeJSON(a.stdout, s)
	return nil
}

func printProgress(w io.Writer, ev swarm.Event) {
	switch ev.Type {
	case swarm.EventStarted:
		fmt.Fprintf(w, "  started %s\n", ev.Swarm)
	case swarm.EventToolCall:
		fmt.Fprintf(w, "  %s → %s(%s)\n", ev.Agent, ev.Tool, clip(string(ev.Arguments), 80))
	case swarm.EventToolResult:
		mark := "←"
		if ev.IsError {
			mark = "✗"
		}
		fmt.Fprintf(w, "  %s %s %s: %s\n", ev.Agent, mark, ev.Tool, clip(ev.Output, 80))
	case swarm.EventHandoffStarted:
		fmt.Fprintf(w, "  %s ⇒ %s: %s\n", ev.Agent, ev.Target, clip(ev.Request, 80))
	case swarm.EventHandoffReturned:
		fmt.Fprintf(w, "  %s ⇐ %s: %s\n", ev.Agent, ev.Target, clip(ev.Output, 80))
	case swarm.EventTurnCompleted:
		fmt.Fprintf(w, "  %s turn %d/%d done\n", ev.Agent, ev.Turn, ev.MaxTurns)
	case swarm.EventModelError:
		fmt.Fprintf(w, "  %s model error (%s): %s\n", ev.Agent, ev.Kind, clip(ev.Reason, 120))
	case swarm.EventPaused:
		fmt.Fprintf(w, "  paused: %s\n", ev.Reason)
	case swarm.EventResumed:
		fmt.Fprintf(w, "  resumed: %s\n", clip(ev.Message, 80))
	case swarm.EventCompleted:
		fmt.Fprintf(w, "  completed\n")
	case swarm.EventFailed:
		fmt.Fprintf(w, "  failed: %s\n", ev.Reason)
	case swarm.EventStopped:
		fmt.Fprintf(w, "  stopped: %s\n", ev.Reason)
	}
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
		return
	}
	fmt.Fprintln(w, string(b))
}

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status ID",
		Short: "Print a run's status as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: a.withRuntime(false, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			s, err := rt.Status(ctx, args[0])
			if err != nil {
				return err
			}
			byAgent, err := rt.UsageByAgent(ctx, args[0])
			if err != nil {
				return err
			}
			writeJSON(a.stdout, struct {
				swarm.Status
				UsageByAgent map[string]model.Usage `json:"usage_by_agent,omitempty"`
			}{s, byAgent})
			return nil
		}),
	}
}

func (a *app) lsCmd() *cobra.Command {
	var swarmID, state string
	var limit int
	var asJSON bool
	c := &cobra.Command{
		Use:   "ls",
		Short: "List runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if state != "" && !store.State(state).Valid() {
				return usageError{fmt.Errorf("unknown state %q (running, paused, completed, failed, stopped)", state)}
			}
			rt, err := a.runtime(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer closeRuntime(rt)
			runs, err := rt.List(cmd.Context(), store.Filter{Swarm: swarmID, State: store.State(state), Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				for _, r := range runs {
					writeJSON(a.stdout, r)
				}
				return nil
			}
			fmt.Fprintf(a.stdout, "%-30s %-20s %-10s %5s  %s\n", "ID", "SWARM", "STATE", "TURN", "UPDATED")
			for _, r := range runs {
				fmt.Fprintf(a.stdout, "%-30s %-20s %-10s %5d  %s\n", r.ID, r.Swarm, r.State, r.Turn, r.UpdatedAt.Local().Format(time.DateTime))
			}
			return nil
		},
	}
	c.Flags().StringVar(&swarmID, "swarm", "", "only runs of this swarm")
	c.Flags().StringVar(&state, "state", "", "only runs in this state")
	c.Flags().IntVar(&limit, "limit", 50, "at most this many runs (0: all)")
	c.Flags().BoolVar(&asJSON, "json", false, "JSON lines instead of a table")
	return c
}

func (a *app) eventsCmd() *cobra.Command {
	var followLive bool
	var after int64
	c := &cobra.Command{
		Use:   "events [-f] ID",
		Short: "Print a run's events as JSON lines (seq, type, ...)",
		Args:  cobra.ExactArgs(1),
		RunE: a.withRuntime(false, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			if !followLive {
				evs, err := rt.History(ctx, args[0], after)
				if err != nil {
					return err
				}
				for _, ev := range evs {
					writeJSON(a.stdout, ev)
				}
				return nil
			}
			for ev, err := range rt.Events(ctx, args[0], after) {
				if err != nil {
					return err
				}
				writeJSON(a.stdout, ev)
			}
			return nil
		}),
	}
	c.Flags().BoolVarP(&followLive, "follow", "f", false, "follow new events until the run ends")
	c.Flags().Int64Var(&after, "after", 0, "only events with a greater sequence number")
	return c
}

func (a *app) resumeCmd() *cobra.Command {
	var quiet bool
	var pause int64
	c := &cobra.Command{
		Use:   "resume ID MESSAGE",
		Short: "Answer a paused run and follow it to its end",
		Args:  cobra.ExactArgs(2),
		RunE: a.withRuntime(true, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			before, err := rt.Status(ctx, args[0])
			if err != nil {
				return err
			}
			var opts []swarm.ResumeOption
			if pause != 0 {
				opts = append(opts, swarm.AtPause(pause))
			}
			if err := rt.Resume(ctx, args[0], args[1], opts...); err != nil {
				return err
			}
			return a.follow(ctx, rt, args[0], before.LastSeq, quiet)
		}),
	}
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	c.Flags().Int64Var(&pause, "pause", 0, "answer only this pause (the status's \"pause\"); refused if the run no longer waits at it")
	return c
}

func (a *app) stopCmd() *cobra.Command {
	var wait time.Duration
	c := &cobra.Command{
		Use:   "stop ID REASON",
		Short: "Stop a run",
		Args:  cobra.ExactArgs(2),
		RunE: a.withRuntime(false, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			if err := rt.Stop(ctx, args[0], args[1]); err != nil {
				return err
			}
			wctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			s, err := rt.Wait(wctx, args[0])
			if err != nil && wctx.Err() == nil {
				return err
			}
			if s.State != swarm.StateStopped && !s.Terminal() {
				fmt.Fprintf(a.stderr, "stop requested; run %s is %s and its owner will stop it\n", s.ID, s.State)
			}
			return a.printOutcome(s)
		}),
	}
	c.Flags().DurationVar(&wait, "wait", 15*time.Second, "how long to wait for the run to stop")
	return c
}

func (a *app) recoverCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "recover",
		Short: "Continue every run whose owner died, and wait for them",
		Long: "Claim every run that is running but unowned or whose lease expired (waiting for leases that are\n" +
			"about to expire, skipping runs whose owner is alive), continue them, and wait until each pauses or ends.\n" +
			"Prints one status JSON line per run.",
		Args: cobra.NoArgs,
		RunE: a.withRuntime(true, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			ids, err := recoverAll(ctx, rt)
			if err != nil {
				return err
			}
			code := 0
			for _, id := range ids {
				s, err := rt.Wait(ctx, id)
				if err != nil {
					return err
				}
				writeJSON(a.stdout, s)
				if s.State == swarm.StateFailed {
					code = ExitFailed
				}
			}
			fmt.Fprintf(a.stderr, "recovered %d run(s)\n", len(ids))
			if code != 0 {
				return exitError{code}
			}
			return nil
		}),
	}
	return c
}

// recoverAll claims runnable runs until none is left, waiting for leases
// that expire; a run whose lease is renewed meanwhile has a live owner and
// is left alone.
func recoverAll(ctx context.Context, rt *swarm.Runtime) ([]string, error) {
	seen := map[string]bool{}
	firstLease := map[string]time.Time{}
	var ids []string
	for {
		claimed, err := rt.Recover(ctx)
		if err != nil {
			return ids, err
		}
		for _, id := range claimed {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		running, err := rt.Store().List(ctx, store.Filter{State: store.Running})
		if err != nil {
			return ids, err
		}
		var next time.Time
		for _, r := range running {
			if seen[r.ID] || r.Owner == rt.Owner() || r.Owner == "" {
				continue
			}
			first, ok := firstLease[r.ID]
			if !ok {
				firstLease[r.ID] = r.LeaseUntil
				first = r.LeaseUntil
			}
			if r.LeaseUntil.After(first) {
				continue // renewed: its owner is alive
			}
			if next.IsZero() || r.LeaseUntil.Before(next) {
				next = r.LeaseUntil
			}
		}
		if next.IsZero() {
			return ids, nil
		}
		t := time.NewTimer(time.Until(next) + 10*time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ids, ctx.Err()
		case <-t.C:
		}
	}
}
