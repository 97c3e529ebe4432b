package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
)

func (a *app) rmCmd() *cobra.Command {
	var age time.Duration
	c := &cobra.Command{
		Use:   "rm ID... | --finished-before DURATION",
		Short: "Delete finished runs, or every finished run older than a duration",
		Long: "Delete each run ID with the runs below it (children, teammates) and all the store keeps for them:\n" +
			"journal, messages, mail, snapshots, a team's tasks, the budget. Only finished runs (completed, failed,\n" +
			"stopped) are deleted: a run that is running or paused, or has such a run below it, is refused (exit 2;\n" +
			"stop it first), and so is a child run on its own (delete its top-level run). The other IDs are still deleted.\n" +
			"--finished-before 720h deletes every finished top-level run last updated more than 720 hours ago instead.",
		Args: func(cmd *cobra.Command, args []string) error {
			expire := cmd.Flags().Changed("finished-before")
			switch {
			case expire && len(args) > 0:
				return usageError{errors.New("give run IDs or --finished-before, not both")}
			case !expire && len(args) == 0:
				return usageError{errors.New("name the runs to delete: swarm rm ID... (or expire old ones: swarm rm --finished-before 720h)")}
			case age < 0:
				return usageError{fmt.Errorf("--finished-before %v: the age must not be negative", age)}
			}
			return nil
		},
		RunE: a.withRuntime(false, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			if len(args) == 0 {
				n, err := rt.Expire(ctx, age)
				fmt.Fprintf(a.stdout, "deleted %d runs finished and last updated more than %v ago\n", n, age)
				return err
			}
			return a.rm(ctx, rt, args)
		}),
	}
	c.Flags().DurationVar(&age, "finished-before", 0, "delete every finished top-level run last updated longer ago than this (e.g. 720h)")
	return c
}

// rm deletes each run of ids, says on stdout which it deleted and on
// stderr why it did not delete the others, and exits 2 if a run was not
// found or not finished, 1 if a deletion failed otherwise.
func (a *app) rm(ctx context.Context, rt *swarm.Runtime, ids []string) error {
	code := ExitCompleted
	for _, id := range ids {
		n, err := rt.Delete(ctx, id)
		switch {
		case err == nil:
			fmt.Fprintf(a.stdout, "deleted run %s", id)
			if n > 1 {
				fmt.Fprintf(a.stdout, " and %d runs below it", n-1)
			}
			fmt.Fprintln(a.stdout)
			continue
		case ctx.Err() != nil:
			return err
		case errors.Is(err, swarm.ErrNotFound):
			err, code = a.notFound(id), max(code, ExitUsage)
		case errors.Is(err, swarm.ErrInvalidState):
			code = max(code, ExitUsage)
		default:
			code = max(code, ExitFailed)
		}
		fmt.Fprintln(a.stderr, "swarm:", err)
	}
	if code != ExitCompleted {
		return exitError{code}
	}
	return nil
}
