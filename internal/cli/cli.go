// Package cli implements the swarm command. It is internal: the command's
// interface is its flags and output, documented in the README.
package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/internal/jsonx"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/network"
	"github.com/swarmrt/swarm/server"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/team"
	"github.com/swarmrt/swarm/telemetry"
	"github.com/swarmrt/swarm/workflow"

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
	// ExitInterrupted: SIGINT (Ctrl-C) or SIGTERM ended the command while
	// it followed or waited for runs; a run it drove is left for `swarm
	// recover` or `swarm serve` to continue (128 + SIGINT, as shells
	// report it).
	ExitInterrupted = 130
)

// DefaultStore is the store used when neither --store nor SWARM_STORE is set.
const DefaultStore = "sqlite:.swarm/runs.db"

// textArgs accepts min to max arguments, the last of which is free text (an
// input, a message): more are taken for a text of several words that the
// shell split, and the error shows the command with the text quoted.
func textArgs(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > max {
			fixed, text := args[:max-1], strings.Join(args[max-1:], " ")
			return usageError{fmt.Errorf("%s takes at most %d argument(s), got %d: put a text of several words in quotes, as in: %s",
				cmd.CommandPath(), max, len(args), strings.Join(append(append([]string{cmd.CommandPath()}, fixed...), shellQuote(text)), " "))}
		}
		if err := cobra.RangeArgs(min, max)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if !strings.ContainsAny(s, `"$\`+"`") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

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
	// storeMissing: the SQLite store named did not exist and a command
	// that only reads runs looked at an empty store instead of creating
	// one.
	storeMissing bool
	// serving: the command is swarm serve, which starts the file's
	// network node itself once it listens.
	serving bool
	// tel is OpenTelemetry as the OTEL_* variables configure it (nil:
	// off).
	tel *telemetry.Telemetry
	// quiet: print nothing on stderr but errors (run -q, resume -q).
	quiet bool
	// shown: the run's progress, its end included, was shown on stderr.
	shown bool
	// engine, when set, is another durable engine plugged in (MainWith);
	// closers end what it opened, when the command is done.
	engine  *Engine
	closers []func()
	// engineOn: the runtime has the engine (its file or flags asked for
	// it).
	engineOn bool
}

// Main runs the command with args (without the program name) and returns
// the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(&app{stdout: stdout, stderr: stderr, stdin: stdin}, args)
}

// run runs the command of a with args and returns the exit code.
func run(a *app, args []string) int {
	stdout, stderr := a.stdout, a.stderr
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
	for _, c := range a.closers {
		c()
	}
	if a.tel != nil {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = a.tel.Shutdown(sctx) // flush spans and metrics
		scancel()
	}
	if err == nil {
		return ExitCompleted
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ce codedError
	if errors.As(err, &ce) {
		fmt.Fprintln(stderr, "swarm:", err)
		return ce.code
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// Ctrl-C is how a follow (events -f) or a wait (recover) ends:
		// no error to show.
		return ExitInterrupted
	}
	if errors.Is(err, swarm.ErrNoModel) {
		fmt.Fprintf(stderr, "swarm: %v; %s\n", err, noModelHint)
	} else {
		fmt.Fprintln(stderr, "swarm:", err)
	}
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, swarm.ErrInvalid) || errors.Is(err, swarm.ErrUnknownSwarm) || errors.Is(err, swarm.ErrInvalidInput) ||
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
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("swarm {{.Version}}\n")
	root.AddCommand(a.docsCmd()) // hidden: writes docs/reference/cli.md
	// --version without cobra's -v: -v is --verbose (swarm serve, swarm
	// mcp), never the version.
	root.Flags().Bool("version", false, "print the build: version, commit, Go version (as swarm version)")
	pf := root.PersistentFlags()
	pf.StringVar(&a.file, "file", "", "swarm definitions (default: swarm.yaml if it exists)")
	pf.StringVar(&a.storeURL, "store", "", "store URL: sqlite:PATH, postgres://HOST/DB or memory: (default $SWARM_STORE or "+DefaultStore+")")
	pf.StringVar(&a.modelSpec, "model", "", "default model spec, e.g. scripted:script.yaml (default $SWARM_MODEL or the file's model)")
	pf.DurationVar(&a.lease, "lease", 30*time.Second, "lease duration: how long a dead process holds a run")
	if a.engine != nil && a.engine.Flags != nil {
		a.engine.Flags(pf)
	}
	root.AddCommand(a.runCmd(), a.statusCmd(), a.lsCmd(), a.eventsCmd(), a.resumeCmd(), a.stopCmd(), a.rmCmd(), a.recoverCmd())
	root.AddCommand(a.forkCmd(), a.inspectCmd())
	root.AddCommand(a.serveCmd())
	root.AddCommand(a.networkCmd())
	root.AddCommand(a.mcpCmd())
	root.AddCommand(a.migrateCmd())
	root.AddCommand(a.chatCmd())
	root.AddCommand(a.teamCmd())
	root.AddCommand(a.versionCmd())
	root.AddCommand(a.healthcheckCmd())
	root.AddCommand(a.initCmd())
	root.AddCommand(a.loginCmd())
	root.AddCommand(a.agentsCmd())
	root.AddCommand(a.memoryCmd())
	root.AddCommand(a.evalCmd())
	return root
}

// runtime opens the store and, when needDefs, the definitions file.
func (a *app) runtime(ctx context.Context, needDefs bool) (*swarm.Runtime, error) {
	rt, _, err := a.openRuntime(ctx, needDefs)
	return rt, err
}

// openRuntime is runtime that also returns the definitions file (nil
// unless needDefs). The definitions file and the models it uses are checked
// before the store is opened, so that a mistake (or a command run in the
// wrong directory) creates no store.
func (a *app) openRuntime(ctx context.Context, needDefs bool) (*swarm.Runtime, *config.File, error) {
	var file *config.File
	if needDefs {
		f, err := a.loadFile()
		if err != nil {
			return nil, nil, err
		}
		file = f
	} else if a.engine != nil && (a.file != "" || fileExists("swarm.yaml")) {
		// The engine's configuration (which swarms are its) is in the
		// file, for the commands that need no definitions too.
		f, err := a.loadFile()
		if err != nil {
			return nil, nil, err
		}
		file = f
	}
	cfg := swarm.Config{Lease: a.lease, Logger: a.logger}
	if err := a.openEngine(ctx, file, &cfg); err != nil {
		return nil, nil, err
	}
	if err := a.chooseModel(file, &cfg); err != nil {
		return nil, nil, err
	}
	if file != nil {
		file.ApplyLimits(&cfg)
	}
	if a.tel == nil {
		tel, err := telemetry.FromEnv(ctx)
		if err != nil {
			return nil, nil, usageError{err}
		}
		a.tel = tel
	}
	a.tel.Apply(&cfg)
	st, err := a.openStoreFor(ctx, a.storeURLOrDefault(), needDefs)
	if err != nil {
		return nil, nil, usageError{err}
	}
	cfg.Store = st
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
		if n := file.Network(); n != nil && !a.serving {
			// A command other than serve consumes the network: it
			// follows the peers but is reached by none.
			if err := n.Start(ctx, network.StartOptions{Runtime: rt}); err != nil {
				rt.Close()
				st.Close()
				return nil, nil, err
			}
		}
	}
	return rt, file, nil
}

// loadFile loads and checks the definitions file: --file, else swarm.yaml
// in the current directory.
func (a *app) loadFile() (*config.File, error) {
	path := a.file
	if path == "" {
		if _, err := os.Stat("swarm.yaml"); err == nil {
			path = "swarm.yaml"
		}
	}
	if path == "" {
		wd, _ := os.Getwd()
		return nil, usageError{fmt.Errorf("no swarm definitions: there is no swarm.yaml in %s; pass --file PATH or run in the directory of your swarm.yaml", wd)}
	}
	file, err := config.Load(path)
	if err != nil {
		return nil, usageError{err}
	}
	a.files = append(a.files, file)
	return file, nil
}

// chooseModel sets the runtime's default model: --model, else
// $SWARM_MODEL, else the file's model:, else one for the API key that is
// set. --model and $SWARM_MODEL replace the file's model: for the agents
// and swarms that name no model of their own; those that name one keep
// it. Every model that will be used is opened (so a missing key or a
// malformed script is reported before any run starts, naming the file and
// line); one that will not be used is not.
func (a *app) chooseModel(file *config.File, cfg *swarm.Config) error {
	spec, from := a.modelSpec, "--model"
	if spec == "" {
		spec, from = os.Getenv("SWARM_MODEL"), "SWARM_MODEL"
	}
	if file != nil {
		if spec != "" {
			file.Model = ""
		}
		if err := file.CheckModels(); err != nil {
			return usageError{err}
		}
		file.ApplyPrices()
		cfg.OpenModel = file.OpenModel
		if spec == "" && file.Model != "" {
			if !file.UsesDefaultModel() {
				return nil
			}
			spec, from = file.Model, file.Path+": model"
		}
	}
	if spec == "" {
		spec, from = defaultModelSpec(), "the default model"
	}
	if spec == "" {
		return nil
	}
	m, err := openModelIn(file, spec)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", from, err)}
	}
	cfg.Model, cfg.ModelSpec = m, spec
	return nil
}

// openStoreFor opens the store at url. A SQLite file that does not exist
// is created only when create is set (commands that run swarms); commands
// that only read runs look at an empty store instead and say so.
func (a *app) openStoreFor(ctx context.Context, url string, create bool) (store.Store, error) {
	if path, ok := strings.CutPrefix(url, "sqlite:"); ok && path != "" {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && !create {
			a.storeMissing = true
			return store.Open(ctx, "memory:")
		}
		if err := ensureStoreDir(url); err != nil {
			return nil, err
		}
	}
	return a.openStore(ctx, url)
}

// storeNote names the store the command looked at, for messages about runs
// that are not there.
func (a *app) storeNote() string {
	url := a.storeURLOrDefault()
	if a.storeMissing {
		return fmt.Sprintf("store %s, which does not exist (pass --store or set SWARM_STORE, or run in the directory you ran the swarm in)", url)
	}
	return "store " + url
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

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
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
		err = f(ctx, rt, args)
		if errors.Is(err, swarm.ErrNotFound) && len(args) > 0 {
			return a.notFound(args[0])
		}
		return err
	}
}

// withDefs is withRuntime for commands that use the definitions file
// itself.
func (a *app) withDefs(f func(ctx context.Context, rt *swarm.Runtime, file *config.File, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		rt, file, err := a.openRuntime(ctx, true)
		if err != nil {
			return err
		}
		defer closeRuntime(rt)
		return f(ctx, rt, file, args)
	}
}

// notFound is the error for a run id that the store does not hold.
func (a *app) notFound(id string) error {
	return usageError{fmt.Errorf("no run %q in %s", id, a.storeNote())}
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
	var id, values string
	var quiet bool
	var budget swarm.Budget
	var attach []string
	c := &cobra.Command{
		Use:   "run [flags] SWARM [INPUT]",
		Short: "Start a run and follow it to its end; the result is printed as JSON",
		Long: "Start a run of SWARM on INPUT (text, or JSON for swarms with structured input; read from stdin when INPUT is -),\n" +
			"show its progress on stderr and print its result as JSON on stdout.\n" +
			"Exit codes: completed 0, failed 1, usage or config error 2, paused 3, stopped 4, interrupted (Ctrl-C) 130.",
		Args: textArgs(0, 2),
		RunE: a.withDefs(func(ctx context.Context, rt *swarm.Runtime, file *config.File, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("name the swarm to run: swarm run SWARM [INPUT]; %s", swarmList(rt, file))}
			}
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
			raw, err := inputJSON(rt, file, args[0], input)
			if err != nil {
				return usageError{err}
			}
			created := true
			opts := []swarm.StartOption{swarm.WithCreated(&created)}
			if id != "" {
				opts = append(opts, swarm.WithID(id))
			}
			if budget != (swarm.Budget{}) {
				opts = append(opts, swarm.WithBudget(budget))
			}
			if values != "" {
				var v map[string]any
				if err := json.Unmarshal([]byte(values), &v); err != nil || v == nil {
					return usageError{fmt.Errorf("--values: want a JSON object, got %q", values)}
				}
				opts = append(opts, swarm.WithValues(v))
			}
			if len(attach) > 0 {
				parts, err := attachments(attach)
				if err != nil {
					return usageError{err}
				}
				opts = append(opts, swarm.WithParts(parts...))
			}
			runID, err := rt.Start(ctx, args[0], raw, opts...)
			switch {
			case errors.Is(err, store.ErrExists):
				return usageError{fmt.Errorf("--id %s is taken: %w; choose another --id", id, err)}
			case errors.Is(err, swarm.ErrInvalidInput) && id != "" && strings.Contains(err.Error(), "run id"):
				return usageError{fmt.Errorf("--id %q: %w", id, err)}
			case errors.Is(err, swarm.ErrInvalidInput):
				return usageError{fmt.Errorf("%s: %w", file.Path, err)}
			}
			if err != nil {
				return err
			}
			if !created && !quiet {
				// Starting an existing id attaches to that run, whatever
				// the input given now: say so rather than replay its
				// progress as if it were new.
				fmt.Fprintf(a.stderr, "run %s exists already: following it (its own input, not this one); choose another --id for a new run\n", runID)
			}
			if !created {
				// The process that drove it may have died: then it is
				// continued here, as swarm recover would.
				dctx, stop := context.WithCancel(ctx)
				var wg sync.WaitGroup
				wg.Go(func() { a.driveOrphan(dctx, rt, runID, quiet) })
				defer wg.Wait()
				defer stop()
			}
			return a.follow(ctx, rt, runID, 0, quiet)
		}),
	}
	c.Flags().StringVar(&id, "id", "", "run id (default: generated); starting an existing id follows that run, and continues it if its process died")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing on stderr but errors")
	c.Flags().StringVar(&values, "values", "", "the run's values, as a JSON object: what its instructions and memory bank names are filled from")
	c.Flags().StringArrayVar(&attach, "attach", nil, "attach FILE (an image, a PDF or another file, audio) to the input; repeat for more")
	c.Flags().Int64Var(&budget.ModelCalls, "max-model-calls", 0, "limit on the run tree's model calls (default: the file's limits: model_calls, else "+fmt.Sprint(swarm.DefaultMaxModelCalls)+"; -1: none)")
	c.Flags().Int64Var(&budget.ToolCalls, "max-tool-calls", 0, "limit on the run tree's tool calls (default: the file's limits: tool_calls, else "+fmt.Sprint(swarm.DefaultMaxToolCalls)+"; -1: none)")
	return c
}

// driveOrphan drives run id here once nobody holds it: its owner released
// it or died (its lease expired without renewal). Claiming the run fences
// off its former owner (store.Store.Claim), so a live owner keeps it. It
// returns when the run is driven here, no longer running, or ctx ends.
func (a *app) driveOrphan(ctx context.Context, rt *swarm.Runtime, id string, quiet bool) {
	said := false
	for {
		r, err := rt.Store().Get(ctx, id)
		if err != nil || r.State != store.Running || r.Owner == rt.Owner() {
			return
		}
		wait := time.Until(r.LeaseUntil)
		if r.Owner == "" || wait <= 0 {
			err := rt.Drive(ctx, id)
			if err == nil {
				if !quiet {
					fmt.Fprintf(a.stderr, "run %s had no live owner: continuing it here\n", id)
				}
				return
			}
			if !errors.Is(err, store.ErrLeased) {
				return // paused or ended meanwhile, or the store failed: follow shows it
			}
			wait = 0 // claimed by another process meanwhile
		} else if !said && !quiet {
			said = true
			fmt.Fprintf(a.stderr, "run %s is driven by another process (%s); it is continued here if that process dies\n", id, r.Owner)
		}
		t := time.NewTimer(wait + 10*time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// swarmList names the swarms and workflows of the definitions file, for
// messages about a swarm that is missing or unknown.
func swarmList(rt *swarm.Runtime, file *config.File) string {
	ids := append(file.SwarmIDs(), file.WorkflowIDs()...)
	if len(ids) == 0 {
		return file.Path + " defines no swarms"
	}
	descs := map[string]string{}
	for _, d := range rt.Swarms() {
		descs[d.ID()] = d.Description()
	}
	width := 0
	for _, id := range ids {
		width = max(width, len(id))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the swarms of %s are:", file.Path)
	for _, id := range ids {
		fmt.Fprintf(&b, "\n  %-*s  %s", width, id, descs[id])
	}
	return strings.TrimRight(b.String(), " ")
}

// inputJSON turns a command-line input into the swarm's JSON input.
func inputJSON(rt *swarm.Runtime, file *config.File, swarmID, input string) (json.RawMessage, error) {
	for _, d := range rt.Swarms() {
		if d.ID() != swarmID {
			continue
		}
		if _, err := findConversation(rt, swarmID); err == nil {
			return nil, fmt.Errorf("%s is a conversation: talk to it with swarm chat %s", swarmID, swarmID)
		}
		if _, ok := d.(*team.Team); ok {
			return nil, fmt.Errorf("%s is a team: use swarm team %s", swarmID, swarmID)
		}
		var sc struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(d.InputSchema(), &sc)
		if sc.Type == "string" {
			return json.Marshal(input)
		}
		if !json.Valid([]byte(input)) {
			return nil, fmt.Errorf("%s: swarm %s takes JSON input matching %s", file.Path, swarmID, d.InputSchema())
		}
		return json.RawMessage(input), nil
	}
	return nil, fmt.Errorf("%w %q; %s", swarm.ErrUnknownSwarm, swarmID, swarmList(rt, file))
}

// follow shows a run's progress (events after seq after) until it pauses or
// ends, prints the outcome and returns the matching exit code.
func (a *app) follow(ctx context.Context, rt *swarm.Runtime, id string, after int64, quiet bool) error {
	a.quiet = quiet
	if quiet {
		s, err := rt.Wait(ctx, id)
		if err != nil {
			return a.interrupted(ctx, id, err)
		}
		return a.printOutcome(s)
	}
	fmt.Fprintf(a.stderr, "run %s\n", id)
	p := newProgress(a.stderr, isTerminal(a.stderr))
	defer p.stop()
	if s, err := rt.Status(ctx, id); err == nil {
		p.root = s.Swarm // when following from after the started event
	}
	for ev, err := range rt.Events(ctx, id, after) {
		if err != nil {
			p.stop()
			return a.interrupted(ctx, id, err)
		}
		p.event(ev)
		if ev.Type == swarm.EventPaused {
			if s, err := rt.Status(ctx, id); err == nil && s.State == swarm.StatePaused {
				break
			}
		}
	}
	p.stop()
	s, err := rt.Wait(ctx, id)
	if err != nil {
		return a.interrupted(ctx, id, err)
	}
	a.shown = p.sawEnd
	return a.printOutcome(s)
}

// interrupted turns the end of a command by a signal into ExitInterrupted,
// saying how the run continues.
func (a *app) interrupted(ctx context.Context, id string, err error) error {
	if ctx.Err() != nil {
		fmt.Fprintf(a.stderr, "interrupted: run %s continues with `swarm recover` (or under `swarm serve`)\n", id)
		return exitError{ExitInterrupted}
	}
	return err
}

func (a *app) printOutcome(s swarm.Status) error {
	q := a.quiet
	switch s.State {
	case swarm.StateCompleted:
		fmt.Fprintln(a.stdout, string(jsonx.Unescape(s.Result)))
		return nil
	case swarm.StatePaused:
		writeJSON(a.stdout, s)
		if !q && !a.shown {
			fmt.Fprintf(a.stderr, "paused: %s\n", s.Reason)
		}
		if !q {
			fmt.Fprintf(a.stderr, "resume with: swarm resume %s MESSAGE\n", s.ID)
		}
		return exitError{ExitPaused}
	case swarm.StateFailed:
		writeJSON(a.stdout, s)
		if !a.shown {
			fmt.Fprintf(a.stderr, "failed: %s\n", s.Reason)
		}
		return exitError{ExitFailed}
	case swarm.StateStopped:
		writeJSON(a.stdout, s)
		if !q && !a.shown {
			fmt.Fprintf(a.stderr, "stopped: %s\n", s.Reason)
		}
		return exitError{ExitStopped}
	}
	writeJSON(a.stdout, s)
	return nil
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}

// writeJSON writes v as one line of JSON, without HTML escaping.
func writeJSON(w io.Writer, v any) {
	b, err := jsonx.Marshal(v)
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
			// The usage of the run's tree, as the dashboard shows it.
			if s.Usage, err = rt.TreeUsage(ctx, args[0]); err != nil {
				return err
			}
			limits, err := server.Limits(ctx, rt, args[0])
			if err != nil {
				return err
			}
			origin := forkOrigin(ctx, rt, args[0])
			var progress *workflow.Progress
			if p, ok := workflow.ProgressOf(ctx, rt, args[0]); ok {
				progress = &p
			}
			writeJSON(a.stdout, struct {
				swarm.Status
				UsageByAgent map[string]model.Usage `json:"usage_by_agent,omitempty"`
				Limits       *server.CallLimits     `json:"limits,omitempty"`
				fork
				// Progress is a workflow run's, in nodes rather than turns.
				Progress *workflow.Progress `json:"progress,omitempty"`
			}{s, byAgent, limits, origin, progress})
			if line := limitsLine(limits); line != "" && !s.State.Terminal() {
				fmt.Fprintln(a.stderr, line)
			}
			switch {
			case origin.Of != "" && origin.At != "":
				fmt.Fprintf(a.stderr, "forked from %s at %s\n", origin.Of, origin.At)
			case origin.Of != "":
				fmt.Fprintf(a.stderr, "forked from %s (a re-run from the start)\n", origin.Of)
			}
			return nil
		}),
	}
}

// fork is where a run was forked from: the run and the step key (see
// swarm.Runtime.Fork), as its started event records them.
type fork struct {
	Of string `json:"fork_of,omitempty"`
	At string `json:"fork_at,omitempty"`
}

// forkOrigin reads run id's started event for where it was forked from;
// the zero fork if it is not a fork (or the event cannot be read).
func forkOrigin(ctx context.Context, rt *swarm.Runtime, id string) fork {
	var f fork
	recs, err := rt.Store().Read(ctx, id, 0, 1)
	if err == nil && len(recs) == 1 && recs[0].Type == string(swarm.EventStarted) {
		_ = json.Unmarshal(recs[0].Data, &f)
	}
	return f
}

func (a *app) lsCmd() *cobra.Command {
	var swarmID, state string
	var limit int
	var asJSON, all bool
	c := &cobra.Command{
		Use:   "ls",
		Short: "List top-level runs (--all: child runs too), newest first",
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
			runs, err := rt.List(cmd.Context(), store.Filter{Swarm: swarmID, State: store.State(state), Limit: limit, TopLevel: !all})
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				fmt.Fprintf(a.stderr, "no runs in %s\n", a.storeNote())
			}
			if asJSON {
				for _, r := range runs {
					writeJSON(a.stdout, r)
				}
				return nil
			}
			parent := func(r swarm.Status) string {
				if !all {
					return ""
				}
				return fmt.Sprintf(" %-30s", cmp.Or(r.Parent, "-"))
			}
			fmt.Fprintf(a.stdout, "%-30s %-20s %-10s %11s %9s%s  %s\n", "ID", "SWARM", "STATE", "PROGRESS", "TOKENS", parent(swarm.Status{Parent: "PARENT"}), "UPDATED")
			for _, r := range runs {
				// The tree's tokens, teammates included, as status and the
				// dashboard count them.
				u, err := rt.TreeUsage(cmd.Context(), r.ID)
				if err != nil {
					return err
				}
				// A swarm's progress is its turn, a workflow's its nodes
				// done of all (one field each, for scripts that split rows).
				progress := strconv.Itoa(r.Turn)
				if p, ok := workflow.ProgressOf(cmd.Context(), rt, r.ID); ok {
					progress = strconv.Itoa(p.Done) + "/" + strconv.Itoa(p.Total)
				}
				fmt.Fprintf(a.stdout, "%-30s %-20s %-10s %11s %9d%s  %s\n", r.ID, r.Swarm, r.State, progress, u.InputTokens+u.OutputTokens,
					parent(r), r.UpdatedAt.Local().Format(time.DateTime))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "child runs (of handoffs and teammates) too, with a PARENT column")
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
					writeJSON(a.stdout, withoutBytes(ev))
				}
				return nil
			}
			for ev, err := range rt.Events(ctx, args[0], after) {
				if err != nil {
					return err
				}
				writeJSON(a.stdout, withoutBytes(ev))
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
	var attach []string
	c := &cobra.Command{
		Use:   "resume ID MESSAGE",
		Short: "Answer a paused run and follow it to its end",
		Args:  textArgs(2, 2),
		RunE: a.withRuntime(true, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			before, err := rt.Status(ctx, args[0])
			if err != nil {
				return err
			}
			var opts []swarm.ResumeOption
			if pause != 0 {
				opts = append(opts, swarm.AtPause(pause))
			}
			if len(attach) > 0 {
				parts, err := attachments(attach)
				if err != nil {
					return usageError{err}
				}
				opts = append(opts, swarm.ResumeParts(parts...))
			}
			if err := rt.Resume(ctx, args[0], args[1], opts...); err != nil {
				if errors.Is(err, swarm.ErrPauseNotCurrent) && !pausedAt(ctx, rt, args[0], pause) {
					return usageError{fmt.Errorf("cannot resume run %s: it has no pause %d (the paused status's \"pause\" names one)", args[0], pause)}
				}
				return refused(ctx, rt, args[0], "resume", err)
			}
			return a.follow(ctx, rt, args[0], before.LastSeq, quiet)
		}),
	}
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	c.Flags().Int64Var(&pause, "pause", 0, "answer only this pause (the status's \"pause\"); refused if the run no longer waits at it")
	c.Flags().StringArrayVar(&attach, "attach", nil, "attach FILE (an image, a PDF or another file, audio) to the message, for the model of the resumed run; repeat for more")
	return c
}

func (a *app) stopCmd() *cobra.Command {
	var wait time.Duration
	c := &cobra.Command{
		Use:   "stop ID REASON",
		Short: "Stop a run",
		Long: "Stop a run, paused or running, here or in another process, and wait for it to stop.\n" +
			"Exits 0 once the stop is accepted, printing the run's status; stopping a finished run is an error.",
		Args: textArgs(2, 2),
		RunE: a.withRuntime(false, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			if err := rt.Stop(ctx, args[0], args[1]); err != nil {
				return refused(ctx, rt, args[0], "stop", err)
			}
			// The stop is accepted: exit 0 and say what became of the run.
			wctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			s, err := rt.Wait(wctx, args[0])
			if err != nil && wctx.Err() == nil {
				return err
			}
			if s.ID == "" { // the wait ended before a first look
				if s, err = rt.Status(ctx, args[0]); err != nil {
					return err
				}
			}
			writeJSON(a.stdout, s)
			switch {
			case s.State == swarm.StateStopped:
				fmt.Fprintf(a.stderr, "stopped run %s: %s\n", s.ID, s.Reason)
			case s.Terminal():
				fmt.Fprintf(a.stderr, "run %s was %s before the stop reached it\n", s.ID, s.State)
			default:
				fmt.Fprintf(a.stderr, "stop requested; run %s is still %s after %s, and its owner will stop it\n", s.ID, s.State, wait)
			}
			return nil
		}),
	}
	c.Flags().DurationVar(&wait, "wait", 15*time.Second, "how long to wait for the run to stop (the stop is accepted either way)")
	return c
}

// refused turns a resume or stop that the run's state refuses into a usage
// error (exit 2) that says why in the run's own terms; other errors pass
// through.
func refused(ctx context.Context, rt *swarm.Runtime, id, what string, err error) error {
	if !errors.Is(err, swarm.ErrInvalidState) {
		return err
	}
	s, serr := rt.Status(ctx, id)
	switch {
	case serr != nil:
		return usageError{fmt.Errorf("cannot %s run %s: %w", what, id, err)}
	case errors.Is(err, swarm.ErrPauseNotCurrent) && s.State == swarm.StatePaused:
		return usageError{fmt.Errorf("cannot %s run %s: that pause was answered; the run now waits at pause %d (%s)", what, id, s.Pause, s.Reason)}
	case errors.Is(err, swarm.ErrPauseNotCurrent):
		return usageError{fmt.Errorf("cannot %s run %s: that pause was answered; the run is %s", what, id, s.State)}
	}
	return usageError{fmt.Errorf("cannot %s run %s: it is %s", what, id, s.State)}
}

// pausedAt reports whether event seq of run id is a pause: one that the
// run waits at or that was answered.
func pausedAt(ctx context.Context, rt *swarm.Runtime, id string, seq int64) bool {
	if seq < 1 {
		return false
	}
	recs, err := rt.Store().Read(ctx, id, seq-1, 1)
	return err == nil && len(recs) == 1 && recs[0].Seq == seq && recs[0].Type == string(swarm.EventPaused)
}

func (a *app) recoverCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "recover",
		Short: "Continue every run whose owner died, and wait for them",
		Long: "Claim every run that is running but unowned or whose lease expired (waiting for leases that are\n" +
			"about to expire, skipping runs whose owner is alive), continue them, and wait until each pauses or ends.\n" +
			"Prints one status JSON line per run on stdout, and on stderr a line per run as it is taken up and as it ends.",
		Args: cobra.NoArgs,
		RunE: a.withRuntime(true, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			ids, err := recoverAll(ctx, rt, a.stderr)
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
				if s.Reason != "" {
					fmt.Fprintf(a.stderr, "run %s %s: %s\n", id, s.State, s.Reason)
				} else {
					fmt.Fprintf(a.stderr, "run %s %s\n", id, s.State)
				}
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
func recoverAll(ctx context.Context, rt *swarm.Runtime, log io.Writer) ([]string, error) {
	seen := map[string]bool{}
	firstLease := map[string]time.Time{}
	var ids []string
	var said time.Time // the lease expiry last announced
	for {
		claimed, err := rt.Recover(ctx)
		if err != nil {
			return ids, err
		}
		for _, id := range claimed {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
				fmt.Fprintf(log, "continuing run %s\n", id)
			}
		}
		running, err := rt.Store().List(ctx, store.Filter{State: store.Running})
		if err != nil {
			return ids, err
		}
		var next time.Time
		var waitFor []string
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
			waitFor = append(waitFor, r.ID)
			if next.IsZero() || r.LeaseUntil.Before(next) {
				next = r.LeaseUntil
			}
		}
		if next.IsZero() {
			return ids, nil
		}
		if !next.Equal(said) {
			said = next
			fmt.Fprintf(log, "waiting for %d run(s) held by another process until their leases expire; the next expires at %s (in %s): %s\n"+
				"  (an owner that is alive renews its lease and keeps its runs; Ctrl-C stops waiting)\n",
				len(waitFor), next.Local().Format(time.TimeOnly), time.Until(next).Round(100*time.Millisecond), clip(strings.Join(waitFor, " "), 200))
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

// limitsLine says how far a run tree is from its call limits, for a
// person reading swarm status ("" when nothing limits its calls).
func limitsLine(l *server.CallLimits) string {
	if l == nil || l.Lifted || l.MaxModelCalls == 0 && l.MaxToolCalls == 0 {
		return ""
	}
	var parts []string
	for _, c := range []struct {
		what     string
		n, limit int64
	}{{"model", l.ModelCalls, l.MaxModelCalls}, {"tool", l.ToolCalls, l.MaxToolCalls}} {
		if c.limit > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d %s calls (%d left)", c.n, c.limit, c.what, max(c.limit-c.n, 0)))
		}
	}
	of := "over the run tree's life"
	if l.PerWork {
		of = "for the run tree's current piece of outside work (a user message, mail or task)"
	}
	return "calls: " + strings.Join(parts, ", ") + " " + of
}
