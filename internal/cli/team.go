package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/team"
)

func (a *app) teamCmd() *cobra.Command {
	var id, task string
	c := &cobra.Command{
		Use:   "team [flags] [TEAM]",
		Short: "Start a team and talk to its lead; teammates work and mail each other meanwhile",
		Long: "Start a run of TEAM (or continue team --id; then TEAM may be left out) and read messages to its lead from\n" +
			"stdin, one per line. The lead's replies go to stdout as \"lead: text\"; prompts and notices go to stderr.\n" +
			"Teammates keep working in this process while you type (and in any `swarm serve` on the same store).\n" +
			"Commands: /team (the roster with states), /inbox [MEMBER] (unread mail, the lead's by default), /tasks,\n" +
			"/requests (protocol requests), /send MEMBER TEXT, /broadcast TEXT, /task SUBJECT (add to the board),\n" +
			"/attach FILE (sent with the next message to the lead),\n" +
			"/quit (or end of input) leaves the team running for a later `swarm team --id`; /close ends it.",
		Args: cobra.MaximumNArgs(1),
		RunE: a.withDefs(func(ctx context.Context, rt *swarm.Runtime, file *config.File, args []string) error {
			name, err := a.nameOrRun(ctx, rt, args, id, "name the team: swarm team TEAM (or swarm team --id ID to continue one); "+teamList(rt, file))
			if err != nil {
				return err
			}
			team, err := teamDef(rt, name)
			if err != nil {
				return usageError{fmt.Errorf("%w; %s", err, teamList(rt, file))}
			}
			// Teammates are driven here while the prompt is open: woken
			// by mail, or taken over from a process that died.
			defer work(ctx, rt)()
			var opts []swarm.StartOption
			if id != "" {
				opts = append(opts, swarm.WithID(id))
			}
			tr, err := team.Start(ctx, rt, task, opts...)
			if errors.Is(err, swarm.ErrInvalidInput) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			st, err := tr.Status(ctx)
			if err != nil {
				return err
			}
			if st.Terminal() {
				return fmt.Errorf("team %s is %s: %s", tr.ID(), st.State, st.Reason)
			}
			fmt.Fprintf(a.stderr, "team %s led by %s (continue later with: swarm team --id %s)\n", tr.ID(), tr.Lead(), tr.ID())
			return a.teamPrompt(ctx, tr)
		}),
	}
	c.Flags().StringVar(&id, "id", "", "team run id: continues that team, or starts one with this id")
	c.Flags().StringVar(&task, "task", "", "the lead's first task (default: wait for your first message)")
	c.AddCommand(a.teamMailCmd(), a.teamTaskCmd())
	return c
}

// work drives rt's runnable runs (woken by mail, or taken over from a
// process that died) until the function it returns is called, which
// returns once the work has stopped.
func work(ctx context.Context, rt *swarm.Runtime) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = rt.Work(wctx, swarm.WorkOptions{DrainTimeout: -1}) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// teamList names the teams of the definitions file.
func teamList(rt *swarm.Runtime, file *config.File) string {
	var names []string
	for _, d := range rt.Swarms() {
		if _, ok := d.(*team.Team); ok {
			names = append(names, d.ID())
		}
	}
	if len(names) == 0 {
		return file.Path + " defines no teams"
	}
	slices.Sort(names)
	return fmt.Sprintf("the teams of %s are: %s", file.Path, strings.Join(names, ", "))
}

// teamDef finds the registered team id.
func teamDef(rt *swarm.Runtime, id string) (*team.Team, error) {
	for _, d := range rt.Swarms() {
		if d.ID() != id {
			continue
		}
		if t, ok := d.(*team.Team); ok {
			return t, nil
		}
		return nil, fmt.Errorf("%s is not a team: use swarm run or swarm chat", id)
	}
	return nil, fmt.Errorf("%w %q: no team with this id", swarm.ErrUnknownSwarm, id)
}

// teamPrompt reads messages to the lead and slash commands until /quit,
// /close or the end of input.
func (a *app) teamPrompt(ctx context.Context, tr *team.TeamRun) error {
	var attached []model.Part // by /attach, for the next message
	return a.prompt(func(line string) (bool, error) {
		if a.attachLine(line, &attached) {
			return false, nil
		}
		cmd, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		var err error
		switch cmd {
		case "/close":
			if err := tr.Close(ctx); err != nil {
				return true, err
			}
			fmt.Fprintf(a.stderr, "team %s closed\n", tr.ID())
			return true, nil
		case "/team":
			var ms []team.MemberStatus
			if ms, err = tr.Roster(ctx); err == nil {
				for _, m := range ms {
					fmt.Fprintf(a.stdout, "%-12s %-10s %-13s unread %d", m.Name, m.Role, m.State, m.Unread)
					if m.Reason != "" {
						fmt.Fprintf(a.stdout, "  (%s)", m.Reason)
					}
					fmt.Fprintln(a.stdout)
				}
			}
		case "/inbox":
			member := rest
			if member == "" {
				member = tr.Lead()
			}
			var mails []team.Mail
			if mails, err = tr.Inbox(ctx, member); err == nil {
				if len(mails) == 0 {
					fmt.Fprintf(a.stdout, "%s's inbox is empty\n", member)
				}
				for _, m := range mails {
					fmt.Fprintf(a.stdout, "[%s] %s: %s\n", m.Type, m.From, m.Content)
				}
			}
		case "/tasks":
			var tasks []team.Task
			if tasks, err = tr.Tasks(ctx); err == nil {
				if len(tasks) == 0 {
					fmt.Fprintln(a.stdout, "the task board is empty")
				}
				for _, t := range tasks {
					fmt.Fprintf(a.stdout, "#%d %-11s %-10s %s", t.ID, t.Status, t.Owner, t.Subject)
					if len(t.BlockedBy) > 0 {
						fmt.Fprintf(a.stdout, "  (blocked by %v)", t.BlockedBy)
					}
					fmt.Fprintln(a.stdout)
				}
			}
		case "/requests":
			var reqs []team.ProtocolRequest
			if reqs, err = tr.Requests(ctx); err == nil {
				if len(reqs) == 0 {
					fmt.Fprintln(a.stdout, "no protocol requests")
				}
				for _, q := range reqs {
					fmt.Fprintf(a.stdout, "%s %s %s -> %s: %s %s\n", q.ID, q.Kind, q.From, q.To, q.State, q.Response)
				}
			}
		case "/send":
			to, text, _ := strings.Cut(rest, " ")
			if to == "" || strings.TrimSpace(text) == "" {
				fmt.Fprintln(a.stderr, "usage: /send MEMBER TEXT")
				return false, nil
			}
			if _, err = tr.Send(ctx, to, strings.TrimSpace(text)); err == nil {
				fmt.Fprintf(a.stderr, "sent to %s\n", to)
			}
		case "/broadcast":
			var to []string
			if to, err = tr.Broadcast(ctx, rest); err == nil {
				fmt.Fprintf(a.stderr, "sent to %s\n", strings.Join(to, ", "))
			}
		case "/task":
			var t team.Task
			if t, err = tr.AddTask(ctx, rest, ""); err == nil {
				fmt.Fprintf(a.stderr, "added task #%d\n", t.ID)
			}
		default:
			if strings.HasPrefix(cmd, "/") {
				fmt.Fprintf(a.stderr, "unknown command %s (try /team, /inbox, /tasks, /requests, /send, /broadcast, /task, /attach, /quit, /close)\n", cmd)
				return false, nil
			}
			p := &replyPrinter{w: a.stdout}
			text, err := tr.Say(ctx, line, swarm.WithStream(p.delta), swarm.WithMessageParts(attached...))
			attached = nil
			p.finish(tr.Lead(), text)
			switch {
			case errors.Is(err, swarm.ErrTurnFailed):
				fmt.Fprintf(a.stderr, "no answer: %v\n", err)
			case errors.Is(err, swarm.ErrInvalidInput):
				fmt.Fprintf(a.stderr, "not sent: %v\n", err)
			case err != nil:
				if ctx.Err() != nil {
					fmt.Fprintf(a.stderr, "interrupted; continue with: swarm team --id %s\n", tr.ID())
				}
				return true, err
			}
			return false, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return true, err
			}
			// A mistake in a command (an unknown member, say) is reported
			// and the prompt goes on.
			fmt.Fprintf(a.stderr, "%s: %v\n", cmd, err)
		}
		return false, nil
	})
}
