package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/strategy"
)

// The team tools, offered to team members besides their own. Their side
// effects are idempotent per tool call (mail ids, task keys and request
// ids derive from the call's idempotency key), so a call repeated after a
// crash changes nothing twice; what they did is journaled with their
// result (events mail, task, protocol, member).
const (
	toolSpawn            = "spawn_teammate"
	toolListTeammates    = "list_teammates"
	toolSendMessage      = "send_message"
	toolBroadcast        = "broadcast"
	toolReadInbox        = "read_inbox"
	toolShutdownRequest  = "shutdown_request"
	toolShutdownResponse = "shutdown_response"
	toolSubmitPlan       = "submit_plan"
	toolReviewPlan       = "review_plan"
	toolCreateTask       = "create_task"
	toolListTasks        = "list_tasks"
	toolClaimTask        = "claim_task"
	toolCompleteTask     = "complete_task"
)

// teamTools returns the team tools of the lead or of a teammate (with
// submit_plan when its plan needs approval).
func teamTools(lead, planApproval bool) []swarm.Tool {
	teamToolSet.once.Do(func() {
		common := []swarm.Tool{listTeammatesTool(), sendMessageTool(), broadcastTool(), readInboxTool(), createTaskTool(), listTasksTool()}
		teamToolSet.lead = append(slices.Clip(common), spawnTool(), shutdownRequestTool(), reviewPlanTool())
		teamToolSet.mate = append(slices.Clip(common), claimTaskTool(), completeTaskTool(), shutdownResponseTool())
		teamToolSet.gated = append(slices.Clip(teamToolSet.mate), submitPlanTool())
	})
	switch {
	case lead:
		return teamToolSet.lead
	case planApproval:
		return teamToolSet.gated
	}
	return teamToolSet.mate
}

// teamToolSet holds the team tools, made once.
var teamToolSet struct {
	once              sync.Once
	lead, mate, gated []swarm.Tool
}

// callID names the executing tool call within its team: its run id and
// step key. The mails, requests, tasks and teammates it makes are keyed by
// it in the team's own tables, which are deleted with the team's run tree,
// so it needs no run instance (see swarm.IdempotencyKey); request ids,
// which models read and copy, stay short.
func callID(ctx context.Context) string { return swarm.RunID(ctx) + "/" + swarm.StepKey(ctx) }

// journal adds events to be journaled with the executing tool call's
// result; keys are the call's step key plus the event's type.
func journal(ctx context.Context, evs ...swarm.Event) { strategy.JournalWith(ctx, 0, evs...) }

// teamTool makes a team tool: fn gets the member's team context.
func teamTool[In any](name, description string, fn func(ctx context.Context, tc *teamCtx, in In) (string, error)) swarm.Tool {
	return swarm.NewTool(name, description, func(ctx context.Context, in In) (string, error) {
		tc, err := teamOfCtx(ctx)
		if err != nil {
			return "", err
		}
		return fn(ctx, tc, in)
	})
}

func spawnTool() swarm.Tool {
	return teamTool(toolSpawn, "Spawn a persistent teammate with a name, a role and a first task. It works on the task, then stays idle until mail arrives.",
		func(ctx context.Context, tc *teamCtx, in struct {
			Name   string `json:"name" jsonschema:"a short unique name: letters, digits, _ and -"`
			Role   string `json:"role" jsonschema:"what the teammate does, such as coder or tester"`
			Prompt string `json:"prompt,omitempty" jsonschema:"the teammate's first task, with all the context it needs; without one it starts idle, waiting for mail"`
		}) (string, error) {
			if err := tc.spawn(ctx, in.Name, in.Role, in.Prompt, callID(ctx)); err != nil {
				return "", err
			}
			journal(ctx, swarm.Event{Type: EventMember, Agent: in.Name, State: MemberSpawning, Target: memberRunID(tc.team, in.Name)})
			return fmt.Sprintf("Spawned %s (%s).", in.Name, in.Role), nil
		})
}

func listTeammatesTool() swarm.Tool {
	return teamTool(toolListTeammates, "List the team's members with their roles and states (spawning, working, idle, shutting_down, shutdown, failed).",
		func(ctx context.Context, tc *teamCtx, _ struct{}) (string, error) {
			ms, err := roster(ctx, tc.rt, tc.td, tc.team)
			if err != nil {
				return "", err
			}
			var b strings.Builder
			for _, m := range ms {
				fmt.Fprintf(&b, "%s (%s): %s\n", m.Name, m.Role, m.State)
			}
			return b.String(), nil
		})
}

func sendMessageTool() swarm.Tool {
	return teamTool(toolSendMessage, "Send a message to one member of the team (a teammate or the lead) by name.",
		func(ctx context.Context, tc *teamCtx, in struct {
			To      string `json:"to" jsonschema:"the recipient's name"`
			Content string `json:"content"`
			Attach  bool   `json:"attach,omitempty" jsonschema:"attach the images and files you have (from your task, tools and mail)"`
		}) (string, error) {
			m, err := sendMail(ctx, tc.rt, tc.td, tc.team, tc.self, []string{in.To}, store.Mail{ID: callID(ctx), Type: MailMessage, Content: in.Content, Parts: attachments(ctx, in.Attach)})
			if err != nil {
				return "", err
			}
			journal(ctx, swarm.Event{Type: EventMail, Agent: tc.self, Target: in.To, Mail: &m})
			return "Sent to " + in.To + ".", nil
		})
}

func broadcastTool() swarm.Tool {
	return teamTool(toolBroadcast, "Send one message to every other member of the team.",
		func(ctx context.Context, tc *teamCtx, in struct {
			Content string `json:"content"`
			Attach  bool   `json:"attach,omitempty" jsonschema:"attach the images and files you have (from your task, tools and mail)"`
		}) (string, error) {
			to, err := broadcastTo(ctx, tc.rt, tc.td, tc.team, tc.self)
			if err != nil {
				return "", err
			}
			if len(to) == 0 {
				return "", errors.New("the team has no other member to broadcast to")
			}
			m, err := sendMail(ctx, tc.rt, tc.td, tc.team, tc.self, to, store.Mail{ID: callID(ctx), Type: MailBroadcast, Content: in.Content, Parts: attachments(ctx, in.Attach)})
			if err != nil {
				return "", err
			}
			journal(ctx, swarm.Event{Type: EventMail, Agent: tc.self, Target: "*", Mail: &m})
			return fmt.Sprintf("Broadcast to %d members: %s.", len(to), strings.Join(to, ", ")), nil
		})
}

// attachments returns the parts a member's mail carries: those of its
// conversation when it asked to attach them.
func attachments(ctx context.Context, attach bool) []model.Part {
	if !attach {
		return nil
	}
	return swarm.ConversationParts(ctx)
}

func readInboxTool() swarm.Tool {
	return teamTool(toolReadInbox, "Read (and consume) the new messages in your inbox. New mail also arrives by itself before each of your turns.",
		func(ctx context.Context, tc *teamCtx, _ struct{}) (string, error) {
			tc.inboxMu.Lock()
			defer tc.inboxMu.Unlock()
			mb, _, err := teamStores(tc.rt.Store())
			if err != nil {
				return "", err
			}
			mails, _, err := mb.Mailbox(ctx, tc.d.RunID(), maxInbox)
			if err != nil {
				return "", err
			}
			// A parallel read_inbox of the same round has these already.
			mails = slices.DeleteFunc(mails, func(m store.Mail) bool { return m.Seq <= tc.read })
			if len(mails) == 0 {
				return "Your inbox is empty.", nil
			}
			tc.read = mails[len(mails)-1].Seq
			strategy.JournalWith(ctx, tc.read, swarm.Event{Type: EventInbox, Agent: tc.self, Mails: mails})
			return mailText(mails), nil
		})
}

func shutdownRequestTool() swarm.Tool {
	return teamTool(toolShutdownRequest, "Ask a teammate to shut down gracefully. It approves (and shuts down) or rejects with a reason; its answer arrives as mail.",
		func(ctx context.Context, tc *teamCtx, in struct {
			Teammate string `json:"teammate"`
			Reason   string `json:"reason,omitempty"`
		}) (string, error) {
			req, err := request(ctx, tc.rt, tc.td, tc.team, store.Request{ID: callID(ctx), Kind: ProtocolShutdown, From: tc.self, To: in.Teammate, Content: in.Reason})
			if err != nil {
				return "", err
			}
			journal(ctx, swarm.Event{Type: EventProtocol, Agent: tc.self, Target: in.Teammate, Protocol: &req})
			return fmt.Sprintf("Shutdown requested from %s (request_id %s).", in.Teammate, req.ID), nil
		})
}

func shutdownResponseTool() swarm.Tool {
	return teamTool(toolShutdownResponse, "Answer a shutdown request from the lead: approve to finish your work and shut down, or reject with a reason.",
		func(ctx context.Context, tc *teamCtx, in struct {
			RequestID string `json:"request_id"`
			Approve   bool   `json:"approve"`
			Reason    string `json:"reason,omitempty"`
		}) (string, error) {
			req, err := respond(ctx, tc.rt, tc.td, tc.team, tc.self, ProtocolShutdown, in.RequestID, in.Approve, in.Reason, callID(ctx))
			if err != nil {
				return "", err
			}
			journal(ctx, swarm.Event{Type: EventProtocol, Agent: tc.self, Target: req.From, Protocol: &req})
			if req.State != store.RequestApproved {
				return "Shutdown rejected.", nil
			}
			tc.noteShutdown(swarm.StepKey(ctx), req.Content)
			return "Shutdown approved: you shut down after this turn.", nil
		})
}

func submitPlanTool() swarm.Tool {
	return teamTool(toolSubmitPlan, "Submit your plan to the lead for approval. Your other tools are refused until the lead approves a plan; a rejection comes with feedback.",
		func(ctx context.Context, tc *teamCtx, in struct {
			Plan string `json:"plan"`
		}) (string, error) {
			req, err := request(ctx, tc.rt, tc.td, tc.team, store.Request{ID: callID(ctx), Kind: ProtocolPlanApproval, From: tc.self, To: tc.td.lead.Name, Content: in.Plan})
			if err != nil {
				return "", err
			}
			journal(ctx, swarm.Event{Type: EventProtocol, Agent: tc.self, Target: tc.td.lead.Name, Protocol: &req})
			return fmt.Sprintf("Plan submitted (request_id %s); wait for the lead's answer in your inbox.", req.ID), nil
		})
}

func reviewPlanTool() swarm.Tool {
	return teamTool(toolReviewPlan, "Approve or reject a teammate's plan (a plan_approval_request in your inbox), with feedback.",
		func(ctx context.Context, tc *teamCtx, in struct {
			RequestID string `json:"request_id"`
			Approve   bool   `json:"approve"`
			Feedback  string `json:"feedback,omitempty"`
		}) (string, error) {
			req, err := respond(ctx, tc.rt, tc.td, tc.team, tc.self, ProtocolPlanApproval, in.RequestID, in.Approve, in.Feedback, callID(ctx))
			if err != nil {
				return "", err
			}
			journal(ctx, swarm.Event{Type: EventProtocol, Agent: tc.self, Target: req.From, Protocol: &req})
			return fmt.Sprintf("Plan of %s %s.", req.From, req.State), nil
		})
}

func createTaskTool() swarm.Tool {
	return teamTool(toolCreateTask, "Add a task to the team's task board. blocked_by lists the ids of tasks that must be completed first.",
		func(ctx context.Context, tc *teamCtx, in struct {
			Subject     string  `json:"subject"`
			Description string  `json:"description,omitempty"`
			BlockedBy   []int64 `json:"blocked_by,omitempty"`
		}) (string, error) {
			t, err := addTask(ctx, tc.rt, tc.td, tc.team, store.Task{Key: callID(ctx), Subject: in.Subject, Description: in.Description, BlockedBy: in.BlockedBy})
			if err != nil {
				return "", err
			}
			journal(ctx, swarm.Event{Type: EventTask, Agent: tc.self, Task: &t})
			return fmt.Sprintf("Created task #%d.", t.ID), nil
		})
}

func listTasksTool() swarm.Tool {
	return teamTool(toolListTasks, "List the team's task board: id, status, owner, subject and what blocks each task.",
		func(ctx context.Context, tc *teamCtx, _ struct{}) (string, error) {
			_, tb, err := teamStores(tc.rt.Store())
			if err != nil {
				return "", err
			}
			tasks, err := tb.Tasks(ctx, tc.team)
			if err != nil {
				return "", err
			}
			if len(tasks) == 0 {
				return "The task board is empty.", nil
			}
			data, err := json.Marshal(tasks)
			return string(data), err
		})
}

func claimTaskTool() swarm.Tool {
	return teamTool(toolClaimTask, "Claim a pending, unblocked task of the board: you become its owner. Exactly one claimant wins a task.",
		func(ctx context.Context, tc *teamCtx, in struct {
			TaskID int64 `json:"task_id"`
		}) (string, error) {
			_, tb, err := teamStores(tc.rt.Store())
			if err != nil {
				return "", err
			}
			t, err := tb.ClaimTask(ctx, tc.team, in.TaskID, tc.self, tc.d.RunID())
			if err != nil {
				return "", err
			}
			tc.noteClaim(t.ID)
			journal(ctx, swarm.Event{Type: EventTask, Agent: tc.self, Task: &t})
			return fmt.Sprintf("You own task #%d: %s.", t.ID, t.Subject), nil
		})
}

func completeTaskTool() swarm.Tool {
	return teamTool(toolCompleteTask, "Mark a task you own completed, with its result; tasks it blocked become claimable.",
		func(ctx context.Context, tc *teamCtx, in struct {
			TaskID int64  `json:"task_id"`
			Result string `json:"result,omitempty"`
		}) (string, error) {
			_, tb, err := teamStores(tc.rt.Store())
			if err != nil {
				return "", err
			}
			t, err := tb.CompleteTask(ctx, tc.team, in.TaskID, tc.d.RunID(), in.Result)
			if err != nil {
				return "", err
			}
			journal(ctx, swarm.Event{Type: EventTask, Agent: tc.self, Task: &t})
			if tc.td.autonomous {
				wakeIdle(ctx, tc.rt, tc.team)
			}
			return fmt.Sprintf("Task #%d completed.", t.ID), nil
		})
}

// gatedTool is a tool of a teammate whose plan needs the lead's approval:
// it refuses to run until the teammate has an approved plan.
type gatedTool struct{ swarm.Tool }

func (g gatedTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	tc, err := teamOfCtx(ctx)
	if err != nil {
		return "", err
	}
	ok, err := tc.planApproved(ctx)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("refused: %s needs an approved plan before using %s; call submit_plan and wait for the lead's answer", tc.self, g.Name())
	}
	return g.Tool.Call(ctx, args)
}

// teamState is what the team tools of one drive of a member's run share.
type teamState struct {
	mu       sync.Mutex
	inboxMu  sync.Mutex
	read     int64             // newest mail read by read_inbox in this drive
	shutdown map[string]string // step key -> reason, of approved shutdowns
	approved bool
	claims   map[int64]bool // tasks the member's journal says it claimed
}

// noteClaim notes that the member's journal says (or is about to say) that
// it claimed task id.
func (tc *teamCtx) noteClaim(id int64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.claims == nil {
		tc.claims = map[int64]bool{}
	}
	tc.claims[id] = true
}

// claimed returns the tasks noted by noteClaim, in order.
func (tc *teamCtx) claimed() []int64 {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return slices.Sorted(maps.Keys(tc.claims))
}

// unaccounted returns the first of tasks (the team's board) that the
// member's run owns, in progress, without a note of its claim, and forgets
// the notes of tasks the run no longer holds (a claim is never taken back
// but by ending the run, nor a completed task claimed again).
func (tc *teamCtx) unaccounted(tasks []store.Task) (store.Task, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	held := map[int64]bool{}
	var lost *store.Task
	for i, t := range tasks {
		if t.Status != store.TaskInProgress || t.OwnerRun != tc.d.RunID() {
			continue
		}
		held[t.ID] = true
		if !tc.claims[t.ID] && lost == nil {
			lost = &tasks[i]
		}
	}
	maps.DeleteFunc(tc.claims, func(id int64, _ bool) bool { return !held[id] })
	if lost == nil {
		return store.Task{}, false
	}
	return *lost, true
}

func (tc *teamCtx) noteShutdown(step, reason string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.shutdown == nil {
		tc.shutdown = map[string]string{}
	}
	if reason == "" {
		reason = "at the lead's request"
	}
	tc.shutdown[step] = reason
}

func (tc *teamCtx) takeShutdown(step string) string {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.shutdown[step]
}

// planApproved reports whether the member has an approved plan.
func (tc *teamCtx) planApproved(ctx context.Context) (bool, error) {
	tc.mu.Lock()
	ok := tc.approved
	tc.mu.Unlock()
	if ok {
		return true, nil
	}
	_, tb, err := teamStores(tc.rt.Store())
	if err != nil {
		return false, err
	}
	reqs, err := tb.Requests(ctx, tc.team)
	if err != nil {
		return false, err
	}
	for _, q := range reqs {
		if q.Kind == ProtocolPlanApproval && q.From == tc.self && q.State == store.RequestApproved {
			tc.mu.Lock()
			tc.approved = true
			tc.mu.Unlock()
			return true, nil
		}
	}
	return false, nil
}

// spawn starts teammate name of the team (idempotent for the same
// spawnedBy: a call repeated after a crash finds the run it started).
func (tc *teamCtx) spawn(ctx context.Context, name, role, prompt, spawnedBy string) error {
	c, skip, err := tc.teammate(ctx, name, role, prompt, spawnedBy)
	if err != nil || skip {
		return err
	}
	return tc.start(ctx, c)
}

// teammate checks the spawn of teammate name and returns its child run;
// skip reports a teammate spawnedBy spawned already.
func (tc *teamCtx) teammate(ctx context.Context, name, role, prompt, spawnedBy string) (c strategy.Child, skip bool, err error) {
	rt := tc.rt
	if err := CheckMemberName(name); err != nil {
		return strategy.Child{}, false, fmt.Errorf("%w: %w", swarm.ErrInvalidInput, err)
	}
	if name == tc.td.lead.Name || name == UserSender {
		return strategy.Child{}, false, fmt.Errorf("%w: %q is taken (the lead, or the user)", swarm.ErrDuplicate, name)
	}
	id := memberRunID(tc.team, name)
	if existing, err := rt.Store().Get(ctx, id); err == nil {
		if by, _ := memberValue(ctx, rt, tc.td, existing.ID, valSpawnedBy); by == spawnedBy {
			return strategy.Child{}, true, nil
		}
		return strategy.Child{}, false, fmt.Errorf("%w: the team already has a teammate named %s", swarm.ErrDuplicate, name)
	} else if !errors.Is(err, store.ErrNotFound) {
		return strategy.Child{}, false, err
	}
	members, err := rt.Store().List(ctx, store.Filter{Parent: tc.team})
	if err != nil {
		return strategy.Child{}, false, err
	}
	if len(members) >= tc.td.maxMembers {
		return strategy.Child{}, false, fmt.Errorf("%w: the team has its maximum of %d teammates", swarm.ErrInvalidInput, tc.td.maxMembers)
	}
	input, _ := json.Marshal(prompt)
	return strategy.Child{ID: id, Input: input, Values: map[string]any{valMember: name, valRole: role, valTeam: tc.team, valSpawnedBy: spawnedBy}}, false, nil
}

// start starts teammates (see Driver.StartChildren).
func (tc *teamCtx) start(ctx context.Context, cs ...strategy.Child) error {
	if len(cs) == 0 {
		return nil
	}
	err := tc.d.StartChildren(ctx, cs...)
	if errors.Is(err, swarm.ErrDuplicate) {
		return fmt.Errorf("%w: the team already has a teammate of that name", swarm.ErrDuplicate)
	}
	return err
}

// memberValue returns a value of a member's start record.
func memberValue(ctx context.Context, rt *swarm.Runtime, td *teamDef, id, key string) (string, error) {
	k := valKey{rt: rt, id: id, at: key}
	if v, ok := td.vals.Load(k); ok {
		return v.(string), nil
	}
	recs, err := rt.Store().Read(ctx, id, 0, 1)
	if err != nil {
		return "", err
	}
	if len(recs) == 0 {
		return "", fmt.Errorf("run %s has no start record", id)
	}
	var ev swarm.Event
	if err := json.Unmarshal(recs[0].Data, &ev); err != nil {
		return "", fmt.Errorf("run %s: start record: %w", id, err)
	}
	v, _ := ev.Values[key].(string)
	td.vals.Store(k, v)
	return v, nil
}

// MemberStatus is one member of a team's roster.
type MemberStatus struct {
	Name  string `json:"name"`
	Role  string `json:"role"`
	Lead  bool   `json:"lead,omitempty"`
	State string `json:"state"`
	// Reason explains a failed member's state (or a pause for a human).
	Reason string `json:"reason,omitempty"`
	RunID  string `json:"run_id"`
	// Unread counts the mails in its inbox not yet consumed.
	Unread int `json:"unread"`
}

// Ended reports whether the member's run has ended (shut down, stopped or
// failed): it works no more and takes no mail.
func (m MemberStatus) Ended() bool {
	return m.State == MemberShutdown || m.State == MemberStopped || m.State == MemberFailed
}

// roster lists team's members, the lead first, then the teammates by
// name, with their lifecycle states as the store has them.
func roster(ctx context.Context, rt *swarm.Runtime, td *teamDef, team string) ([]MemberStatus, error) {
	st := rt.Store()
	lead, err := st.Get(ctx, team)
	if err != nil {
		return nil, err
	}
	mb, tb, err := teamStores(st)
	if err != nil {
		return nil, err
	}
	// Unread mail is counted before the states are read, so that the
	// roster errs on the busy side: mail posted after the count wakes its
	// member (which then shows working), and a member that consumed its
	// mail after the count shows working unless it has gone idle again.
	unread := map[string]int{team: 0}
	runs, err := st.List(ctx, store.Filter{Parent: team})
	if err != nil {
		return nil, err
	}
	for _, run := range runs {
		if !run.State.Terminal() {
			unread[run.ID] = 0
		}
	}
	for id := range unread {
		mails, _, err := mb.Mailbox(ctx, id, maxInbox)
		if err != nil {
			return nil, err
		}
		unread[id] = len(mails)
	}
	if lead, err = st.Get(ctx, team); err != nil {
		return nil, err
	}
	if runs, err = st.List(ctx, store.Filter{Parent: team}); err != nil {
		return nil, err
	}
	reqs, err := tb.Requests(ctx, team)
	if err != nil {
		return nil, err
	}
	leaving := map[string]bool{}
	for _, q := range reqs {
		if q.Kind == ProtocolShutdown && (q.State == store.RequestPending || q.State == store.RequestApproved) {
			leaving[q.To] = true
		}
	}
	out := []MemberStatus{{Name: td.lead.Name, Role: "lead", Lead: true, RunID: team, State: memberState(lead, false), Unread: unread[team]}}
	if lead.State.Terminal() {
		out[0].Reason = lead.Reason
	}
	for _, run := range runs {
		name, ok := strings.CutPrefix(run.ID, team+"~")
		if !ok {
			continue
		}
		role, err := memberValue(ctx, rt, td, run.ID, valRole)
		if err != nil {
			return nil, err
		}
		ms := MemberStatus{Name: name, Role: role, RunID: run.ID, State: memberState(run, leaving[name]), Unread: unread[run.ID]}
		if run.State == store.Failed || run.State == store.Stopped || (run.State == store.Paused && run.Reason != swarm.AwaitingMail) {
			ms.Reason = run.Reason
		}
		out = append(out, ms)
	}
	slices.SortFunc(out[1:], func(a, b MemberStatus) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// memberState maps a member's run row to its lifecycle state.
func memberState(run store.Run, leaving bool) string {
	switch run.State {
	case store.Completed:
		return MemberShutdown
	case store.Stopped:
		return MemberStopped
	case store.Failed:
		return MemberFailed
	}
	switch {
	case leaving:
		return MemberShuttingDown
	case run.State == store.Running && run.LastSeq <= 1:
		return MemberSpawning
	case run.State == store.Paused && (run.Reason == swarm.AwaitingMail || run.Reason == swarm.AwaitingMessage):
		return MemberIdle
	}
	return MemberWorking
}

// memberRun resolves a member name of team to its run id.
func memberRunOf(ctx context.Context, rt *swarm.Runtime, td *teamDef, team, name string) (string, error) {
	if _, err := rt.Store().Get(ctx, team); err != nil {
		return "", err
	}
	if name == td.lead.Name {
		return team, nil
	}
	if CheckMemberName(name) != nil {
		return "", fmt.Errorf("%w: %q", ErrNoMember, name)
	}
	id := memberRunID(team, name)
	if _, err := rt.Store().Get(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("%w: the team has no member named %s", ErrNoMember, name)
		}
		return "", err
	}
	return id, nil
}

// sendMail posts m from member from to the members named to, and
// returns it as stored in the first recipient's mailbox.
func sendMail(ctx context.Context, rt *swarm.Runtime, td *teamDef, team, from string, to []string, m store.Mail) (store.Mail, error) {
	var err error
	ids := make([]string, len(to))
	for i, name := range to {
		if name == from {
			return store.Mail{}, fmt.Errorf("%w: %s cannot send mail to itself", swarm.ErrInvalidInput, from)
		}
		if ids[i], err = memberRunOf(ctx, rt, td, team, name); err != nil {
			return store.Mail{}, err
		}
	}
	m.From = from
	got, err := rt.Post(ctx, ids, m)
	switch {
	case errors.Is(err, store.ErrInvalidState):
		return store.Mail{}, fmt.Errorf("%w: a recipient has shut down or failed: %w", swarm.ErrInvalidState, err)
	case err != nil:
		return store.Mail{}, err
	}
	for _, g := range got {
		if g.From != m.From || g.Type != m.Type || g.Content != m.Content {
			return store.Mail{}, fmt.Errorf("mail %q was posted with other content: %w", m.ID, store.ErrExists)
		}
	}
	return got[0], nil
}

// broadcastTo lists the members a broadcast from from reaches: every
// member but from that has not ended.
func broadcastTo(ctx context.Context, rt *swarm.Runtime, td *teamDef, team, from string) ([]string, error) {
	ms, err := roster(ctx, rt, td, team)
	if err != nil {
		return nil, err
	}
	var to []string
	for _, m := range ms {
		if m.Name != from && !m.Ended() {
			to = append(to, m.Name)
		}
	}
	return to, nil
}

// request records a protocol request and mails it to its recipient.
func request(ctx context.Context, rt *swarm.Runtime, td *teamDef, team string, q store.Request) (store.Request, error) {
	_, tb, err := teamStores(rt.Store())
	if err != nil {
		return store.Request{}, err
	}
	if q.Kind == ProtocolShutdown {
		if q.To == td.lead.Name {
			return store.Request{}, fmt.Errorf("%w: the lead cannot be asked to shut down", swarm.ErrInvalidInput)
		}
		id, err := memberRunOf(ctx, rt, td, team, q.To)
		if err != nil {
			return store.Request{}, err
		}
		run, err := rt.Store().Get(ctx, id)
		if err != nil {
			return store.Request{}, err
		}
		if run.State.Terminal() {
			return store.Request{}, fmt.Errorf("%w: %s has already %s", swarm.ErrInvalidState, q.To, memberState(run, false))
		}
	}
	q.Deadline = time.Now().Add(td.timeout)
	got, err := tb.AddRequest(ctx, team, q)
	if err != nil {
		return store.Request{}, err
	}
	typ := MailShutdownRequest
	if q.Kind == ProtocolPlanApproval {
		typ = MailPlanApprovalRequest
	}
	if _, err := sendMail(ctx, rt, td, team, q.From, []string{q.To}, store.Mail{ID: got.ID, Type: typ, RequestID: got.ID, Content: q.Content}); err != nil {
		return store.Request{}, err
	}
	return got, nil
}

// respond answers protocol request id (of kind) as member self, and mails
// the answer to the requester. A repeat of the same answer (after a crash)
// returns the request as resolved.
func respond(ctx context.Context, rt *swarm.Runtime, td *teamDef, team, self, kind, id string, approve bool, text, mailID string) (store.Request, error) {
	_, tb, err := teamStores(rt.Store())
	if err != nil {
		return store.Request{}, err
	}
	reqs, err := tb.Requests(ctx, team)
	if err != nil {
		return store.Request{}, err
	}
	i := slices.IndexFunc(reqs, func(q store.Request) bool { return q.ID == id })
	if i < 0 || reqs[i].Kind != kind || reqs[i].To != self {
		return store.Request{}, fmt.Errorf("no pending %s request %q addressed to %s: %w", strings.ReplaceAll(kind, "_", " "), id, self, ErrNoRequest)
	}
	state := store.RequestRejected
	if approve {
		state = store.RequestApproved
	}
	got, err := tb.ResolveRequest(ctx, team, id, state, text)
	if errors.Is(err, store.ErrInvalidState) && !(got.State == state && got.Response == text) {
		return store.Request{}, fmt.Errorf("request %s is %s: %w", id, got.State, err)
	} else if err != nil && !errors.Is(err, store.ErrInvalidState) {
		return store.Request{}, err
	}
	typ := MailShutdownResponse
	if kind == ProtocolPlanApproval {
		typ = MailPlanApprovalResponse
	}
	content := string(state)
	if text != "" {
		content += ": " + text
	}
	if _, err := sendMail(ctx, rt, td, team, self, []string{got.From}, store.Mail{ID: mailID, Type: typ, ReplyTo: id, Content: content}); err != nil && !errors.Is(err, swarm.ErrInvalidState) {
		return store.Request{}, err
	}
	return got, nil
}

// addTask adds a task to team's board and, in an autonomous team, wakes
// the idle teammates so that one of them claims it.
func addTask(ctx context.Context, rt *swarm.Runtime, td *teamDef, team string, t store.Task) (store.Task, error) {
	_, tb, err := teamStores(rt.Store())
	if err != nil {
		return store.Task{}, err
	}
	if strings.TrimSpace(t.Subject) == "" {
		return store.Task{}, fmt.Errorf("%w: a task needs a subject", swarm.ErrInvalidInput)
	}
	got, err := tb.AddTask(ctx, team, t)
	if errors.Is(err, store.ErrNotFound) {
		// blocked by a task the board does not have
		return store.Task{}, fmt.Errorf("%w: %w", swarm.ErrInvalidInput, err)
	}
	if err != nil {
		return store.Task{}, err
	}
	if td.autonomous {
		wakeIdle(ctx, rt, team)
	}
	return got, nil
}

// wakeIdle wakes the idle teammates of team (to look at the task board).
func wakeIdle(ctx context.Context, rt *swarm.Runtime, team string) {
	runs, err := rt.Store().List(ctx, store.Filter{Parent: team, State: store.Paused})
	if err != nil {
		return
	}
	for _, run := range runs {
		if store.WaitsForMail(run.State, run.Reason) {
			nudgeIdle(ctx, rt, run.ID, run.LastSeq)
		}
	}
}

// nudgeIdle wakes idle teammate id, to look at its mailbox and the task
// board. The caller saw it wait for mail with lastSeq its newest record;
// the resume names that record, so a teammate that has moved on since (to
// work, or to a pause for a human, which this resume must not answer)
// refuses it.
func nudgeIdle(ctx context.Context, rt *swarm.Runtime, id string, lastSeq int64) {
	err := rt.Resume(ctx, id, "", swarm.AtPause(lastSeq))
	if err != nil && !errors.Is(err, store.ErrInvalidState) {
		slog.Warn("waking an idle teammate", "run", id, "err", err)
	}
}
