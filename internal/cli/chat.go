package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/model"
)

// chatContext is the context type of conversations defined in YAML.
type chatContext = map[string]any

func (a *app) chatCmd() *cobra.Command {
	var id string
	c := &cobra.Command{
		Use:   "chat [flags] [CONVERSATION]",
		Short: "Talk to a conversation; each reply shows the agent that answers",
		Long: "Start a session of CONVERSATION (or continue session --id; then CONVERSATION may be left out) and read\n" +
			"user messages from stdin, one per line.\n" +
			"Replies go to stdout as \"agent: text\", streamed as they are written, each handover to another agent\n" +
			"as a line \"(from → to)\" before the reply; prompts and notices go to stderr.\n" +
			"Commands: /quit (or end of input) leaves the session open for a later `swarm chat --id`; /close ends it;\n" +
			"/context prints the shared context as JSON; /attach FILE sends FILE (an image, a PDF, audio) with the next message.",
		Args: cobra.MaximumNArgs(1),
		RunE: a.withDefs(func(ctx context.Context, rt *swarm.Runtime, file *config.File, args []string) error {
			name, err := a.nameOrRun(ctx, rt, args, id, "name the conversation: swarm chat CONVERSATION (or swarm chat --id ID to continue a session); "+conversationList(rt, file))
			if err != nil {
				return err
			}
			conv, err := findConversation(rt, name)
			if err != nil {
				return usageError{fmt.Errorf("%w; %s", err, conversationList(rt, file))}
			}
			var opts []swarm.StartOption
			if id != "" {
				opts = append(opts, swarm.WithID(id))
			}
			sess, err := conv.Start(ctx, rt, opts...)
			if errors.Is(err, swarm.ErrInvalidInput) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			st, err := sess.Status(ctx)
			if err != nil {
				return err
			}
			if st.Terminal() {
				return fmt.Errorf("conversation %s is %s: %s", sess.ID(), st.State, st.Reason)
			}
			fmt.Fprintf(a.stderr, "conversation %s with %s (continue later with: swarm chat --id %s)\n", sess.ID(), st.Agent, sess.ID())
			return a.chat(ctx, sess, st.Agent)
		}),
	}
	c.Flags().StringVar(&id, "id", "", "session id: continues that session, or starts one with this id")
	return c
}

// nameOrRun returns the definition named in args, or else the swarm of
// run id (a session or team to continue); with neither, usage is the
// error.
func (a *app) nameOrRun(ctx context.Context, rt *swarm.Runtime, args []string, id, usage string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	if id == "" {
		return "", usageError{errors.New(usage)}
	}
	st, err := rt.Status(ctx, id)
	if errors.Is(err, swarm.ErrNotFound) {
		return "", a.notFound(id)
	}
	if err != nil {
		return "", err
	}
	return st.Swarm, nil
}

// conversationList names the conversations of the definitions file.
func conversationList(rt *swarm.Runtime, file *config.File) string {
	var names []string
	for _, d := range rt.Swarms() {
		if _, ok := d.(*conversation.Conversation[chatContext]); ok {
			names = append(names, d.ID())
		}
	}
	if len(names) == 0 {
		return file.Path + " defines no conversations"
	}
	slices.Sort(names)
	return fmt.Sprintf("the conversations of %s are: %s", file.Path, strings.Join(names, ", "))
}

// findConversation finds the registered conversation id.
func findConversation(rt *swarm.Runtime, id string) (*conversation.Conversation[chatContext], error) {
	for _, d := range rt.Swarms() {
		if d.ID() != id {
			continue
		}
		if c, ok := d.(*conversation.Conversation[chatContext]); ok {
			return c, nil
		}
		return nil, fmt.Errorf("%s is a swarm, not a conversation: use swarm run", id)
	}
	return nil, fmt.Errorf("%w %q: no conversation with this id", swarm.ErrUnknownSwarm, id)
}

// chat reads messages until /quit, /close or the end of input; active is
// the agent that answers first.
func (a *app) chat(ctx context.Context, sess *conversation.Session[chatContext], active string) error {
	var attached []model.Part // by /attach, for the next message
	return a.prompt(func(line string) (bool, error) {
		if a.attachLine(line, &attached) {
			return false, nil
		}
		switch line {
		case "/close":
			if err := sess.Close(ctx); err != nil {
				return true, err
			}
			fmt.Fprintf(a.stderr, "conversation %s closed\n", sess.ID())
			return true, nil
		case "/context":
			v, err := sess.Context(ctx)
			if err != nil {
				return true, err
			}
			writeJSON(a.stdout, v)
			return false, nil
		}
		p := &replyPrinter{w: a.stdout, active: active}
		rep, err := sess.Say(ctx, line, swarm.WithStream(p.delta), swarm.WithMessageParts(attached...))
		attached = nil
		p.finish(rep.Agent, rep.Text)
		active = p.active
		switch {
		case errors.Is(err, swarm.ErrTurnFailed):
			fmt.Fprintf(a.stderr, "no answer: %v\n", err)
		case errors.Is(err, swarm.ErrInvalidInput):
			fmt.Fprintf(a.stderr, "not sent: %v\n", err)
		case err != nil:
			if ctx.Err() != nil {
				fmt.Fprintf(a.stderr, "interrupted; continue with: swarm chat --id %s\n", sess.ID())
			}
			return true, err
		case rep.Waiting != "":
			fmt.Fprintf(a.stderr, "paused: %s (your next line answers it)\n", rep.Waiting)
		}
		return false, nil
	})
}

// prompt reads lines from stdin, prompting "you> " on stderr when stdin is
// a terminal (piped lines get no prompt), and hands each non-empty one to
// handle until it says quit, /quit or /exit is typed, or the input ends.
func (a *app) prompt(handle func(line string) (quit bool, err error)) error {
	in := bufio.NewScanner(a.stdin)
	in.Buffer(make([]byte, 64*1024), 1<<20)
	typed := isTerminal(a.stdin)
	for {
		if typed {
			fmt.Fprint(a.stderr, "you> ")
		}
		if !in.Scan() {
			if typed {
				fmt.Fprintln(a.stderr)
			}
			if err := in.Err(); err != nil {
				return fmt.Errorf("reading messages: %w", err)
			}
			return nil
		}
		line := strings.TrimSpace(in.Text())
		switch line {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		}
		if quit, err := handle(line); quit || err != nil {
			return err
		}
	}
}

// replyPrinter prints streamed text as "agent: text" lines, one per model
// call, and the reply itself unless it was streamed; before the first words
// of an agent other than the active one, it prints the handover as
// "(from → to)".
type replyPrinter struct {
	w          io.Writer
	active     string
	agent      string
	call       int
	text       strings.Builder
	open, seen bool
}

func (p *replyPrinter) delta(d swarm.Event) {
	if !p.seen || d.Agent != p.agent || d.Call != p.call {
		p.end()
		p.handover(d.Agent)
		p.agent, p.call, p.seen, p.open = d.Agent, d.Call, true, true
		p.text.Reset()
		fmt.Fprintf(p.w, "%s: ", d.Agent)
	}
	p.text.WriteString(d.Text)
	fmt.Fprint(p.w, d.Text)
}

// handover prints "(from → to)" if agent is not the active agent, and
// makes it the active one.
func (p *replyPrinter) handover(agent string) {
	if agent != "" && agent != p.active {
		if p.active != "" {
			fmt.Fprintf(p.w, "(%s → %s)\n", p.active, agent)
		}
		p.active = agent
	}
}

func (p *replyPrinter) end() {
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

func (p *replyPrinter) finish(agent, text string) {
	p.end()
	if text != "" && (agent != p.agent || text != p.text.String()) {
		p.handover(agent)
		fmt.Fprintf(p.w, "%s: %s\n", agent, text)
	}
}

// attachLine handles a line "/attach FILE" of a prompt: FILE is read and
// added to attached, for the next message, or the error is reported on
// stderr. It reports whether line was such a command.
func (a *app) attachLine(line string, attached *[]model.Part) bool {
	path, ok := strings.CutPrefix(line, "/attach ")
	if !ok {
		return false
	}
	path = strings.TrimSpace(path)
	parts, err := attachments([]string{path})
	if err != nil {
		fmt.Fprintln(a.stderr, err)
		return true
	}
	*attached = append(*attached, parts...)
	fmt.Fprintf(a.stderr, "attached %s to the next message\n", path)
	return true
}
