package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/team"
)

// The non-interactive team commands: swarm team mail and swarm team task
// post to a team run in the store, then drive the team here until it
// settles (every member idle or ended, every teammate's mail read) or
// --wait passes. A `swarm serve` on the same store may drive it instead:
// the store's leases decide who does.

func (a *app) teamMailCmd() *cobra.Command {
	var to, id string
	var wait time.Duration
	c := &cobra.Command{
		Use:   "mail [flags] TEAM_RUN TEXT",
		Short: "Post a message from you to a member of a team run (--to '*': to every member)",
		Long: "Post TEXT from the user to member --to of team run TEAM_RUN (the lead's run id; '*' broadcasts), print\n" +
			"the mail as JSON (a broadcast: the members it reached), then drive the team here until it settles or\n" +
			"--wait passes. With --id the post is safe to retry: a mail with the same id is delivered once.",
		Args: textArgs(2, 2),
		RunE: a.withDefs(func(ctx context.Context, rt *swarm.Runtime, _ *config.File, args []string) error {
			if to == "" {
				return usageError{errors.New("name the recipient: --to MEMBER (or --to '*' for every member)")}
			}
			var opts []team.MailOption
			if id != "" {
				opts = append(opts, team.WithMailID(id))
			}
			return a.teamPost(ctx, rt, args[0], wait, func(tr *team.TeamRun) (any, error) {
				if to == "*" {
					got, err := tr.Broadcast(ctx, args[1], opts...)
					return map[string][]string{"to": got}, err
				}
				return tr.Send(ctx, to, args[1], opts...)
			})
		}),
	}
	c.Flags().StringVar(&to, "to", "", "the member to mail ('*': every member that has not ended)")
	c.Flags().StringVar(&id, "id", "", "the mail's id, which makes a retried post deliver once")
	c.Flags().DurationVar(&wait, "wait", 5*time.Minute, "how long to drive the team here before leaving it to whoever drives it next")
	return c
}

func (a *app) teamTaskCmd() *cobra.Command {
	var description string
	var blockedBy []int64
	var wait time.Duration
	c := &cobra.Command{
		Use:   "task [flags] TEAM_RUN SUBJECT",
		Short: "Add a task to a team run's task board",
		Long: "Add a task with SUBJECT to the board of team run TEAM_RUN (the lead's run id), print it as JSON, then drive\n" +
			"the team here until it settles or --wait passes (in an autonomous team an idle teammate claims the task).",
		Args: textArgs(2, 2),
		RunE: a.withDefs(func(ctx context.Context, rt *swarm.Runtime, _ *config.File, args []string) error {
			return a.teamPost(ctx, rt, args[0], wait, func(tr *team.TeamRun) (any, error) {
				return tr.AddTask(ctx, args[1], description, blockedBy...)
			})
		}),
	}
	c.Flags().StringVar(&description, "description", "", "the task's description")
	c.Flags().Int64SliceVar(&blockedBy, "blocked-by", nil, "ids of tasks that must be completed first")
	c.Flags().DurationVar(&wait, "wait", 5*time.Minute, "how long to drive the team here before leaving it to whoever drives it next")
	return c
}

// teamPost opens team run id, posts to it with post (whose result goes to
// stdout as JSON) and drives the team here until it settles or wait
// passes.
func (a *app) teamPost(ctx context.Context, rt *swarm.Runtime, id string, wait time.Duration, post func(*team.TeamRun) (any, error)) error {
	tr, err := team.Open(ctx, rt, id)
	switch {
	case errors.Is(err, swarm.ErrNotFound):
		return a.notFound(id)
	case errors.Is(err, team.ErrNotTeam):
		return usageError{err}
	case err != nil:
		return err
	}
	// The worker runs before the post, so that the members it wakes are
	// driven by it.
	defer work(ctx, rt)()
	got, err := post(tr)
	if errors.Is(err, swarm.ErrInvalidInput) || errors.Is(err, team.ErrNoMember) || errors.Is(err, swarm.ErrInvalidState) || errors.Is(err, store.ErrExists) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	writeJSON(a.stdout, got)
	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ms, err := settle(sctx, tr)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case sctx.Err() != nil:
		fmt.Fprintf(a.stderr, "team %s still at work after %s (%s): left to whoever drives it next (swarm serve, swarm team --id %s)\n", tr.ID(), wait, memberStates(ms), tr.ID())
		return nil
	case err != nil:
		return err
	}
	fmt.Fprintf(a.stderr, "team %s settled: %s\n", tr.ID(), memberStates(ms))
	return nil
}

// settle waits until every member of tr is idle or ended and every
// teammate has read its mail, and returns the roster it last read.
func settle(ctx context.Context, tr *team.TeamRun) ([]team.MemberStatus, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ms, err := tr.Roster(ctx)
		if err != nil {
			return ms, err
		}
		settled := true
		for _, m := range ms {
			switch m.State {
			case team.MemberIdle, team.MemberShutdown, team.MemberStopped, team.MemberFailed:
				settled = settled && (m.Lead || m.Unread == 0)
			default:
				settled = false
			}
		}
		if settled {
			return ms, nil
		}
		select {
		case <-ctx.Done():
			return ms, ctx.Err()
		case <-tick.C:
		}
	}
}

// memberStates is "name state, ..." of a roster.
func memberStates(ms []team.MemberStatus) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.Name + " " + m.State
	}
	return strings.Join(s, ", ")
}
