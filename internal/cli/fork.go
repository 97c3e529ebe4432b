package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	forkopt "github.com/swarmrt/swarm/fork"
)

// forkCmd starts a new run from a recorded step of another (see
// swarm.Runtime.Fork) and follows it like swarm run.
func (a *app) forkCmd() *cobra.Command {
	var (
		id, input, values string
		edits             []string
		quiet             bool
	)
	c := &cobra.Command{
		Use:   "fork [flags] ID [STEP]",
		Short: "Start a new run from a recorded step of run ID, reusing the steps before it",
		Long: "Start a new run of the swarm of run ID that reuses ID's journal up to STEP (a step key, as in swarm events)\n" +
			"and runs everything from STEP on: the recorded steps before it are not executed again. Without STEP the\n" +
			"run is re-run from the start with nothing reused. --input and --values replace the run's input and values.\n" +
			"--edit KEY=TEXT replaces the outcome of the step KEY (at or before STEP) in the fork: a tool result's output,\n" +
			"a model response's text or the answer to a pause; the run continues from the edited state. An edit at STEP\n" +
			"keeps that step, edited, and runs what follows it; with edits and no STEP the fork is at the last edited step.\n" +
			"The fork is followed to its end like swarm run (same exit codes).",
		Args: cobra.RangeArgs(1, 2),
		RunE: a.withDefs(func(ctx context.Context, rt *swarm.Runtime, file *config.File, args []string) error {
			at := ""
			if len(args) == 2 {
				at = args[1]
			}
			var opts []forkopt.Option
			if id != "" {
				opts = append(opts, forkopt.ID(id))
			}
			if input != "" {
				origin, err := rt.Status(ctx, args[0])
				if errors.Is(err, swarm.ErrNotFound) {
					return a.notFound(args[0])
				}
				if err != nil {
					return err
				}
				raw, err := inputJSON(rt, file, origin.Swarm, input)
				if err != nil {
					return usageError{err}
				}
				opts = append(opts, forkopt.Input(raw))
			}
			if values != "" {
				var v map[string]any
				if err := json.Unmarshal([]byte(values), &v); err != nil {
					return usageError{fmt.Errorf("--values: want a JSON object: %w", err)}
				}
				opts = append(opts, forkopt.Values(v))
			}
			if len(edits) > 0 {
				es := make([]forkopt.Edit, len(edits))
				for i, e := range edits {
					key, text, ok := strings.Cut(e, "=")
					if !ok || key == "" {
						return usageError{fmt.Errorf("--edit %q: want KEY=TEXT (KEY a step key, as in swarm events)", e)}
					}
					es[i] = forkopt.Edit{Key: key, Output: text}
				}
				opts = append(opts, forkopt.Edits(es...))
			}
			forkID, err := rt.Fork(ctx, args[0], at, opts...)
			if errors.Is(err, swarm.ErrNotFound) {
				return a.notFound(args[0])
			}
			if errors.Is(err, swarm.ErrInvalidInput) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if !quiet {
				fmt.Fprintf(a.stderr, "fork %s of run %s\n", forkID, args[0])
			}
			return a.follow(ctx, rt, forkID, 0, quiet)
		}),
	}
	c.Flags().StringVar(&id, "id", "", "the fork's run id (default: generated)")
	c.Flags().StringVar(&input, "input", "", "a new input (text, or JSON for swarms with structured input)")
	c.Flags().StringVar(&values, "values", "", "new values, as a JSON object")
	c.Flags().StringArrayVar(&edits, "edit", nil, "KEY=TEXT: replace the outcome of step KEY in the fork (repeatable)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing on stderr but errors")
	return c
}
