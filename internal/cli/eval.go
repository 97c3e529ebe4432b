package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/store"
)

// Exit codes of swarm eval run (besides ExitUsage and ExitInterrupted).
const (
	// ExitBelowThreshold: a report's pass rate is below its set's
	// threshold, and every case was run and scored (the swarm under
	// test got cases wrong).
	ExitBelowThreshold = 1
	// ExitEvalError: an eval could not be finished as it should: a report
	// is below its threshold and some of its cases could not be run or
	// scored (a judge's answers stayed malformed, a custom scorer is
	// unknown), or the eval run itself failed or stopped.
	ExitEvalError = 5
)

func (a *app) evalCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "eval",
		Short: "Run eval sets against swarm definitions, compare eval runs, make cases from runs",
		Long: "Evaluations: an eval set (YAML or JSON) holds cases, each an input and what its run must do; swarm eval run\n" +
			"runs every case against the swarm definitions (--config, else --file or swarm.yaml) as a durable eval run,\n" +
			"scores it and prints a table (or JSON, or JUnit XML for CI). See docs/evaluations.md.",
	}
	c.AddCommand(a.evalRunCmd(), a.evalCompareCmd(), a.evalAddCmd(), a.evalLsCmd())
	return c
}

func (a *app) evalRunCmd() *cobra.Command {
	var configs, tags []string
	var asJSON, quiet bool
	var junit, id string
	var parallel int
	c := &cobra.Command{
		Use:   "run [flags] SET",
		Short: "Run an eval set and print its cases and scores; with two --config, compare them",
		Long: "Run every case of SET (an eval set file, YAML or JSON) against the swarm definitions of each --config (a\n" +
			"swarm.yaml; without --config, --file or ./swarm.yaml), one durable eval run per configuration. Progress goes\n" +
			"to stderr (a bar on a terminal, a line per case otherwise), the table of cases and scores to stdout (--json:\n" +
			"the report as JSON). With two or more --config, each configuration after the first is compared with the\n" +
			"first: deltas per case and score, and p-values (McNemar on pass/fail, Wilcoxon on scores).\n" +
			"The eval run's id is derived from the set and the configuration, so the same command after a crash or\n" +
			"Ctrl-C continues the unfinished eval run: no finished case is run again. Once it has ended, the same command\n" +
			"starts a new eval run (its id ends in -2, -3, ...).\n" +
			"Exit codes: every report at or above its set's threshold 0; below it 1 (cases failed); below it with\n" +
			"cases that could not be run or scored, or an eval run that failed, 5; usage or configuration error 2;\n" +
			"interrupted (Ctrl-C) 130.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			set, err := eval.Load(args[0])
			if err != nil {
				return usageError{err}
			}
			if parallel < 0 {
				return usageError{fmt.Errorf("--parallel %d: want 1 or more (0: the set's, else the default)", parallel)}
			}
			if id != "" && len(configs) > 1 {
				return usageError{errors.New("--id names one eval run: give it with one --config at most")}
			}
			if len(configs) == 0 {
				configs = []string{a.file}
			}
			var reports []*eval.Report
			for _, cfg := range configs {
				r, err := a.evalOne(ctx, set, cfg, id, tags, parallel, quiet)
				if err != nil {
					return err
				}
				reports = append(reports, r)
			}
			var comparisons []*eval.Comparison
			for _, r := range reports[1:] {
				comparisons = append(comparisons, eval.Compare(reports[0], r))
			}
			if junit != "" {
				if err := writeJUnitFile(junit, reports); err != nil {
					return err
				}
			}
			switch {
			case asJSON && len(reports) == 1:
				writeJSON(a.stdout, reports[0])
			case asJSON:
				writeJSON(a.stdout, struct {
					Reports     []*eval.Report     `json:"reports"`
					Comparisons []*eval.Comparison `json:"comparisons"`
				}{reports, comparisons})
			default:
				for i, r := range reports {
					if i > 0 {
						fmt.Fprintln(a.stdout)
					}
					if len(reports) > 1 {
						fmt.Fprintf(a.stdout, "== %s\n", cmp.Or(r.Config, "(default)"))
					}
					if err := eval.WriteTable(a.stdout, r); err != nil {
						return err
					}
				}
				for _, c := range comparisons {
					fmt.Fprintf(a.stdout, "\n== %s vs %s\n", cmp.Or(c.Base, "(default)"), cmp.Or(c.Other, "(default)"))
					if err := eval.WriteComparison(a.stdout, c); err != nil {
						return err
					}
				}
			}
			return reportsExit(reports)
		},
	}
	c.Flags().StringArrayVar(&configs, "config", nil, "swarm definitions (a swarm.yaml) to run the set against; repeat to compare configurations (default: --file or ./swarm.yaml)")
	c.Flags().StringArrayVar(&tags, "tag", nil, "run only the cases with this tag; repeat for more")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (with several --config: {\"reports\": [...], \"comparisons\": [...]})")
	c.Flags().StringVar(&junit, "junit", "", "also write the reports as JUnit XML to FILE, for CI")
	c.Flags().IntVar(&parallel, "parallel", 0, "cases run at once (default: the set's parallel:, else 4)")
	c.Flags().StringVar(&id, "id", "", "the eval run's id (default: derived from the set and the configuration, so that the same command continues it)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	return c
}

// evalOne runs set against the definitions file cfg ("" for the default)
// and returns its report: it opens a runtime on the file, starts (or
// continues) the eval run, shows its progress and waits for its report.
func (a *app) evalOne(ctx context.Context, set *eval.Set, cfg, id string, tags []string, parallel int, quiet bool) (*eval.Report, error) {
	a.file = cfg
	rt, err := a.runtime(ctx, true)
	if err != nil {
		return nil, err
	}
	defer closeRuntime(rt)
	if err := eval.Define(rt, eval.Options{Parallel: parallel}); err != nil {
		return nil, err
	}
	label := cfg
	if label == "" && len(a.files) > 0 {
		label = a.files[len(a.files)-1].Path
	}
	runID, err := eval.Start(ctx, rt, set, eval.RunOptions{RunID: id, Config: label, Tags: tags})
	if err != nil {
		if errors.Is(err, swarm.ErrInvalidInput) || errors.Is(err, swarm.ErrUnknownSwarm) || errors.Is(err, swarm.ErrInvalid) {
			return nil, usageError{err}
		}
		return nil, err
	}
	// The eval run may be one a killed process left: drive it (and its
	// unfinished cases) here once their leases expire, as swarm run does.
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.driveEvalOrphans(dctx, rt, runID) })
	defer stop() // before wg.Wait
	if !quiet {
		fmt.Fprintf(a.stderr, "eval run %s: %s against %s\n", runID, set.Name, cmp.Or(label, "(default)"))
		if err := a.evalProgress(ctx, rt, runID); err != nil {
			return nil, a.evalInterrupted(ctx, runID, err)
		}
	}
	r, err := eval.Wait(ctx, rt, runID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, a.evalInterrupted(ctx, runID, err)
		}
		return nil, exitWith(ExitEvalError, fmt.Errorf("eval run %s: %w", runID, err))
	}
	if a.tel != nil {
		if err := eval.EmitScores(ctx, a.tel.TracerProvider(), rt, r); err != nil {
			fmt.Fprintf(a.stderr, "swarm: telemetry: %v\n", err)
		}
	}
	return r, nil
}

// evalInterrupted turns the end of swarm eval run by a signal into
// ExitInterrupted, saying how the eval run continues.
func (a *app) evalInterrupted(ctx context.Context, id string, err error) error {
	if ctx.Err() != nil {
		fmt.Fprintf(a.stderr, "interrupted: eval run %s continues when the same command runs again (or under swarm serve); no finished case runs again\n", id)
		return exitError{ExitInterrupted}
	}
	return err
}

// driveEvalOrphans drives eval run id here, and its case runs, once
// nobody holds them (a process that ran the same command was killed).
func (a *app) driveEvalOrphans(ctx context.Context, rt *swarm.Runtime, id string) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.driveOrphan(ctx, rt, id, true) })
	kids, err := rt.Store().List(ctx, store.Filter{Parent: id, State: store.Running})
	if err != nil {
		return
	}
	for _, k := range kids {
		if k.Owner != rt.Owner() {
			wg.Go(func() { a.driveOrphan(ctx, rt, k.ID, true) })
		}
	}
}

// evalProgress follows eval run id until it ends: on a terminal a bar
// redrawn in place, otherwise a line per finished case.
func (a *app) evalProgress(ctx context.Context, rt *swarm.Runtime, id string) error {
	tty := isTerminal(a.stderr)
	drawn := false
	for ev, err := range rt.Events(ctx, id, 0) {
		if err != nil {
			return err
		}
		switch ev.Type {
		case eval.EventCase:
			var p eval.Progress
			if json.Unmarshal(ev.Progress, &p) != nil {
				continue
			}
			name := p.Case
			if tty {
				fmt.Fprintf(a.stderr, "\r\033[K%s", progressBar(p, name))
				drawn = true
			} else {
				fmt.Fprintf(a.stderr, "  [%d/%d] %s %s (%d passed, %d failed, %d errors)\n", p.Done, p.Total, name, caseWord(p), p.Passed, p.Failed, p.Errors)
			}
		case swarm.EventFailed, swarm.EventStopped:
			if drawn {
				fmt.Fprintln(a.stderr)
				drawn = false
			}
			fmt.Fprintf(a.stderr, "eval run %s %s: %s\n", id, ev.Type, ev.Reason)
		}
	}
	if drawn {
		fmt.Fprintln(a.stderr)
	}
	return nil
}

// caseWord is a finished case's outcome as a progress line shows it.
func caseWord(p eval.Progress) string {
	if p.Pass {
		return "passed"
	}
	return "did not pass"
}

// progressBar draws an eval run's progress in one line of at most 80
// columns: [#####.....] 5/10  4 ✓ 1 ✗ 0 !  last-case.
func progressBar(p eval.Progress, last string) string {
	const width = 24
	filled := 0
	if p.Total > 0 {
		filled = min(width*p.Done/p.Total, width)
	}
	return fmt.Sprintf("[%s%s] %d/%d  %d passed  %d failed  %d errors  %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		p.Done, p.Total, p.Passed, p.Failed, p.Errors, clip(last, 20))
}

// reportsExit is the exit code of swarm eval run for its reports.
func reportsExit(reports []*eval.Report) error {
	code := ExitCompleted
	for _, r := range reports {
		if r.Pass {
			continue
		}
		if r.Errors > 0 {
			return exitError{ExitEvalError}
		}
		code = ExitBelowThreshold
	}
	if code != ExitCompleted {
		return exitError{code}
	}
	return nil
}

// exitWith is an error shown on stderr that exits with code.
type codedError struct {
	code int
	err  error
}

func (e codedError) Error() string { return e.err.Error() }
func (e codedError) Unwrap() error { return e.err }

func exitWith(code int, err error) error { return codedError{code, err} }

// writeJUnitFile writes reports as JUnit XML to path, atomically (a CI
// step never reads half a file).
func writeJUnitFile(path string, reports []*eval.Report) error {
	var b bytes.Buffer
	if err := eval.WriteJUnit(&b, reports...); err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	return nil
}

// evalReport reads the report of finished eval run id.
func evalReport(ctx context.Context, rt *swarm.Runtime, id string) (*eval.Report, error) {
	s, err := rt.Status(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.Swarm != eval.SwarmID {
		return nil, usageError{fmt.Errorf("run %s is a run of %s, not an eval run (swarm eval ls lists them)", id, s.Swarm)}
	}
	if s.State != swarm.StateCompleted {
		return nil, usageError{fmt.Errorf("eval run %s is %s, not finished: it has no report yet (swarm eval run continues it)", id, s.State)}
	}
	var r eval.Report
	if err := json.Unmarshal(s.Result, &r); err != nil {
		return nil, fmt.Errorf("eval run %s: its report: %w", id, err)
	}
	return &r, nil
}

func (a *app) evalCompareCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "compare BASE OTHER",
		Short: "Compare two finished eval runs of one set, case by case, with p-values",
		Args:  cobra.ExactArgs(2),
		RunE: a.withRuntime(false, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			base, err := evalReport(ctx, rt, args[0])
			if err != nil {
				return err
			}
			other, err := evalReport(ctx, rt, args[1])
			if err != nil {
				return err
			}
			if base.Set != other.Set {
				fmt.Fprintf(a.stderr, "note: the eval runs are of different sets (%s, %s): only the cases both hold are compared\n", base.Set, other.Set)
			}
			c := eval.Compare(base, other)
			if asJSON {
				writeJSON(a.stdout, c)
				return nil
			}
			return eval.WriteComparison(a.stdout, c)
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return c
}

func (a *app) evalAddCmd() *cobra.Command {
	var to, id string
	var tags []string
	c := &cobra.Command{
		Use:   "add RUN",
		Short: "Turn a recorded run into an eval case (its output and trajectory as the expectation, to review)",
		Long: "Make an eval case of run RUN: its input, and its observed output and calls as what is expected. With --to SET\n" +
			"the case is appended to the set file (YAML or JSON, created if missing); otherwise it is printed as YAML.\n" +
			"Review the expectation before you commit it: it holds what the run did, right or wrong.",
		Args: cobra.ExactArgs(1),
		RunE: a.withRuntime(false, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			c, err := eval.CaseFromRun(ctx, rt, args[0])
			if err != nil {
				return err
			}
			if id != "" {
				c.ID = id
			}
			c.Tags = append(c.Tags, tags...)
			if to == "" {
				enc := yaml.NewEncoder(a.stdout)
				enc.SetIndent(2)
				if err := enc.Encode([]eval.Case{c}); err != nil {
					return err
				}
				return enc.Close()
			}
			st, err := rt.Status(ctx, args[0])
			if err != nil {
				return err
			}
			if err := appendCase(to, st.Swarm, c); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "added case %s to %s\n", c.ID, to)
			return nil
		}),
	}
	c.Flags().StringVar(&to, "to", "", "append the case to this set file (YAML or JSON)")
	c.Flags().StringVar(&id, "id", "", "the case's id (default: from the run)")
	c.Flags().StringArrayVar(&tags, "tag", nil, "tag the case; repeat for more")
	return c
}

// appendCase appends c to the set file at path: a YAML file keeps its
// comments and layout, a JSON file is written again indented; a missing
// file becomes a set of this one case against swarm swarmID. A case id the
// set holds already is refused.
func appendCase(path, swarmID string, c eval.Case) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data = nil
	} else if err != nil {
		return usageError{fmt.Errorf("--to: %w", err)}
	}
	if len(bytes.TrimSpace(data)) > 0 {
		// The cases the file has (a set may have none yet: the whole set
		// is checked once the case is in).
		var have struct {
			Cases []struct {
				ID string `json:"id" yaml:"id"`
			} `json:"cases" yaml:"cases"`
		}
		if err := yaml.Unmarshal(data, &have); err != nil {
			return usageError{fmt.Errorf("%s: %w", path, err)}
		}
		for _, old := range have.Cases {
			if old.ID == c.ID {
				return usageError{fmt.Errorf("%s has a case %q already: pass --id", path, c.ID)}
			}
		}
	}
	var out []byte
	if strings.EqualFold(filepath.Ext(path), ".json") {
		var set map[string]any
		if len(bytes.TrimSpace(data)) > 0 {
			if err := json.Unmarshal(data, &set); err != nil {
				return usageError{fmt.Errorf("%s: %w", path, err)}
			}
		} else {
			set = map[string]any{"name": setName(path), "swarm": swarmID}
		}
		cases, _ := set["cases"].([]any)
		set["cases"] = append(cases, c)
		if out, err = json.MarshalIndent(set, "", "  "); err != nil {
			return err
		}
		out = append(out, '\n')
	} else {
		if out, err = appendYAMLCase(data, path, swarmID, c); err != nil {
			return err
		}
	}
	if _, err := eval.Parse(out, path); err != nil {
		return usageError{fmt.Errorf("the set with the case added would not load, so %s is left as it was: %w", path, err)}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	return os.Rename(tmp, path)
}

// appendYAMLCase appends c to the cases: of the YAML set data, keeping the
// rest of the document as it is (a new document is a set of swarmID).
func appendYAMLCase(data []byte, path, swarmID string, c eval.Case) ([]byte, error) {
	var caseNode yaml.Node
	if err := caseNode.Encode(c); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, usageError{fmt.Errorf("%s: %w", path, err)}
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
		scalar := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }
		doc.Content[0].Content = append(doc.Content[0].Content, scalar("name"), scalar(setName(path)), scalar("swarm"), scalar(swarmID))
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, usageError{fmt.Errorf("%s: a set is a mapping (name:, swarm:, cases:)", path)}
	}
	var cases *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "cases" {
			cases = root.Content[i+1]
		}
	}
	if cases == nil || cases.Kind != yaml.SequenceNode {
		if cases != nil && !(cases.Kind == yaml.ScalarNode && cases.Tag == "!!null") {
			return nil, usageError{fmt.Errorf("%s: cases: is not a list", path)}
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if cases != nil {
			*cases = *seq
		} else {
			root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "cases"}, seq)
			cases = seq
		}
	}
	cases.Style = 0
	cases.Content = append(cases.Content, &caseNode)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// setName names a new set after its file: support.eval.yaml is "support".
func setName(path string) string {
	name, _, _ := strings.Cut(filepath.Base(path), ".")
	return cmp.Or(name, "recorded")
}

func (a *app) evalLsCmd() *cobra.Command {
	var limit int
	var asJSON bool
	c := &cobra.Command{
		Use:   "ls",
		Short: "List eval runs, newest first: set, configuration, pass rate",
		Args:  cobra.NoArgs,
		RunE: a.withRuntime(false, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			runs, err := eval.Runs(ctx, rt, limit)
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				fmt.Fprintf(a.stderr, "no eval runs in %s\n", a.storeNote())
			}
			if asJSON {
				for _, r := range runs {
					writeJSON(a.stdout, r)
				}
				return nil
			}
			fmt.Fprintf(a.stdout, "%-36s %-16s %-10s %-24s %9s %6s %6s %6s  %s\n", "ID", "SET", "STATE", "CONFIG", "PASS RATE", "PASSED", "FAILED", "ERRORS", "UPDATED")
			for _, r := range runs {
				fmt.Fprintf(a.stdout, "%-36s %-16s %-10s %-24s %9s %6d %6d %6d  %s\n", r.ID, clip(r.Set, 16), r.State, clip(r.Config, 24),
					fmt.Sprintf("%.0f%%", 100*r.PassRate), r.Passed, r.Failed, r.Errors, r.Updated.Local().Format(time.DateTime))
			}
			return nil
		}),
	}
	c.Flags().IntVar(&limit, "limit", 50, "at most this many eval runs (0: all)")
	c.Flags().BoolVar(&asJSON, "json", false, "JSON lines instead of a table")
	return c
}
