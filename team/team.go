// Package team runs durable agent teams (seed 002): a lead and persistent
// teammates that talk through durable mailboxes, settle protocol requests
// (shutdowns, plan approvals) and share a task board, all kept in the
// store.
//
// A team run is a run of a [Team] definition: the lead's run. Each
// teammate is a child run of it, named "<team run id>~<name>", driven by
// the member strategy (strategy.go): it works on its prompt, then goes
// idle (paused, holding no lease and no goroutine) until mail wakes it,
// and so on until it is shut down. The lead talks with the user like a
// conversation: it answers each message sent to the team run, and sees its
// mail at every model call.
//
// The package is written on the public strategy seam, package strategy
// ([strategy.Strategy], [strategy.Driver], [strategy.DefineAgentRuns]) and nothing
// else of it: a kind of run a user could have written.
package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/strategy"
)

// Errors of teams.
var (
	// ErrNotTeam: the run is not a team run (or a teammate of one).
	ErrNotTeam = errors.New("not a team run")
	// ErrNoMember: no member of the team has that name.
	ErrNoMember = errors.New("no such team member")
	// ErrNoRequest: the team has no such protocol request (shutdown or
	// plan approval) for the member answering it.
	ErrNoRequest = errors.New("no such request")
)

// Mail is a message in a team member's mailbox (see [store.Mailboxes]).
type Mail = store.Mail

// Task is an entry of a team's task board (see [store.Teams]).
type Task = store.Task

// ProtocolRequest is a team protocol request: a shutdown or a plan
// approval, pending until answered or expired (see [store.Teams]).
type ProtocolRequest = store.Request

// The events of a team's runs, journaled by its strategy and tools beside
// the engine's (see [swarm.Event]).
const (
	// EventMember: a team member's lifecycle changed (Agent is the
	// member, State its new state: spawning, working or idle; its run's
	// end shows shutdown or failed). The lead journals spawning; a
	// member its own working and idle.
	EventMember swarm.EventType = "member"
	// EventMail: a team member sent Mail to Target (a member name, or
	// "*" for a broadcast).
	EventMail swarm.EventType = "mail"
	// EventInbox: a team member's model was given Mails, consumed in the
	// same append as the model response that saw them.
	EventInbox swarm.EventType = "inbox"
	// EventTask: a team member created, claimed or completed Task.
	EventTask swarm.EventType = "task"
	// EventProtocol: a team member made or answered a protocol request.
	EventProtocol swarm.EventType = "protocol"
)

// Member lifecycle states, as a roster shows them.
const (
	MemberSpawning     = "spawning"
	MemberWorking      = "working"
	MemberIdle         = "idle"
	MemberShuttingDown = "shutting_down"
	MemberShutdown     = "shutdown"
	// MemberStopped: the member's run was stopped from outside (a person
	// shut it down, or its team ended); the reason says why.
	MemberStopped = "stopped"
	MemberFailed  = "failed"
)

// Mail types: the Type of a [store.Mail] between team members.
const (
	MailMessage              = "message"
	MailBroadcast            = "broadcast"
	MailShutdownRequest      = "shutdown_request"
	MailShutdownResponse     = "shutdown_response"
	MailPlanApprovalRequest  = "plan_approval_request"
	MailPlanApprovalResponse = "plan_approval_response"
)

// Protocol kinds: the Kind of a [store.Request].
const (
	ProtocolShutdown     = "shutdown"
	ProtocolPlanApproval = "plan_approval"
)

// UserSender is the From of mail sent by the user (through the API), not
// by a member.
const UserSender = "user"

// Team defaults.
const (
	DefaultRequestTimeout = 10 * time.Minute
	DefaultMaxWakes       = 100
	DefaultMaxMembers     = 32
)

// TeamSpec configures a team.
type TeamSpec struct {
	// Lead is the lead's agent: its name, instructions, model and tools.
	// It also gets the team tools (spawn_teammate, send_message, ...).
	Lead *swarm.Agent
	// Members are teammates spawned when the team starts.
	Members []Teammate
	// Template is what a teammate spawned by the lead's model is made
	// of: its Instructions, Model, Tools and PlanApproval (the model
	// gives Name, Role and Prompt). Empty instructions get a default.
	Template Teammate
	// Autonomous lets an idle teammate claim an unblocked, unowned task
	// of the board by itself and work on it.
	Autonomous bool
	// RequestTimeout is how long a protocol request stays pending before
	// it expires (DefaultRequestTimeout if zero).
	RequestTimeout time.Duration
	// MaxWakes bounds how many times a teammate goes from idle to working
	// (DefaultMaxWakes if zero): a teammate that reaches it fails with a
	// reason instead of calling its model forever (two teammates
	// answering each other's mail, say).
	MaxWakes int
	// MaxTurns bounds the model calls of one piece of work of a member
	// (DefaultMaxTurns if zero).
	MaxTurns int
	// MaxMembers bounds the number of teammates (DefaultMaxMembers if
	// zero).
	MaxMembers int
	// Compaction keeps each member's history within its model's context
	// window (the lead's Agent.Compaction and a Teammate's Compaction
	// win).
	Compaction *compact.Config
	// Guardrails check every member's steps (see [guardrail.Guardrail]); the lead's
	// Agent.Guardrails and a Teammate's Guardrails come after them. The
	// input point checks the lead's user messages and a teammate's prompt.
	Guardrails []guardrail.Guardrail
}

// Teammate is a member of a team other than its lead.
type Teammate struct {
	// Name identifies the teammate in its team (a short name: letters,
	// digits, '_' and '-').
	Name string
	// Role says what the teammate does ("coder", "tester").
	Role string
	// Prompt is the teammate's first piece of work; without one it
	// starts idle, waiting for mail.
	Prompt string
	// Instructions is the teammate's system prompt, a text/template
	// rendered with .Name, .Role, .Lead and .Team (the team run id).
	Instructions string
	// Model is the teammate's model (the runtime's default if empty).
	Model string
	// Tools are the teammate's own tools, besides the team tools.
	Tools []swarm.Tool
	// PlanApproval: the teammate must submit a plan (submit_plan) and
	// have it approved by the lead before any of its own Tools runs.
	PlanApproval bool
	// Compaction keeps the teammate's history within its model's
	// context window (nil: the team's).
	Compaction *compact.Config
	// Guardrails check the teammate's steps, after the team's.
	Guardrails []guardrail.Guardrail
}

// defaultTeammateInstructions is the system prompt of a teammate without
// instructions of its own.
const defaultTeammateInstructions = `You are {{.Name}}, the {{.Role}} of a team led by {{.Lead}}.
Mail from your team arrives as <inbox> messages. Use send_message to talk to a teammate or the lead, and the task tools to take and finish work from the team's task board.
When you have done what was asked, answer with a short summary of what you did: you then go idle until new mail arrives.`

// Team is a durable team definition: a lead that talks with the user,
// teammates that persist across pieces of work, mailboxes, protocols and a
// task board, all kept in the store. Define one with [DefineTeam], start
// one with [Team.Start]; its runs are registered like any swarm's. It is a
// definition of agent runs (see [strategy.DefineAgentRuns]): the lead's run and
// each teammate's are runs of it, driven by the member strategy.
type Team struct {
	swarm.Definition
	spec TeamSpec
	td   *teamDef
}

// teamDef is what the runtime needs of a team definition.
type teamDef struct {
	lead       *swarm.Agent
	members    map[string]Teammate
	order      []string // declared members in order
	template   Teammate
	autonomous bool
	timeout    time.Duration
	maxWakes   int
	maxTurns   int
	maxMembers int
	compaction *compact.Config
	guardrails []guardrail.Guardrail
	// vals caches values of members' start records, by valKey.
	vals sync.Map
}

// valKey is a key of teamDef.vals.
type valKey struct {
	rt     *swarm.Runtime
	id, at string
}

// DefineTeam makes a team definition. Mistakes (no lead, a bad or repeated
// member name) are reported when it is registered.
func DefineTeam(id, description string, spec TeamSpec) *Team {
	t := &Team{spec: spec}
	var err error
	t.td, err = defineTeam(id, spec)
	t.Definition = strategy.DefineAgentRuns(id, description, t.plan, err)
	return t
}

func defineTeam(id string, spec TeamSpec) (*teamDef, error) {
	if spec.Lead == nil {
		return nil, fmt.Errorf("%w: team %s has no lead", swarm.ErrInvalid, id)
	}
	if err := CheckMemberName(spec.Lead.Name); err != nil {
		return nil, fmt.Errorf("%w: team %s: lead: %w", swarm.ErrInvalid, id, err)
	}
	td := &teamDef{lead: spec.Lead, members: map[string]Teammate{}, template: spec.Template, autonomous: spec.Autonomous,
		timeout: spec.RequestTimeout, maxWakes: spec.MaxWakes, maxTurns: spec.MaxTurns, maxMembers: spec.MaxMembers, compaction: spec.Compaction,
		guardrails: spec.Guardrails}
	if err := (strategy.AgentRun{Agent: spec.Lead, Guardrails: spec.Guardrails, Compaction: spec.Compaction, Strategy: memberStrategy{}}).Check(); err != nil {
		return nil, fmt.Errorf("team %s: lead: %w", id, err)
	}
	if td.timeout <= 0 {
		td.timeout = DefaultRequestTimeout
	}
	if td.maxWakes <= 0 {
		td.maxWakes = DefaultMaxWakes
	}
	if td.maxTurns <= 0 {
		td.maxTurns = swarm.DefaultMaxTurns
	}
	if td.maxMembers <= 0 {
		td.maxMembers = DefaultMaxMembers
	}
	if len(spec.Members) > td.maxMembers {
		return nil, fmt.Errorf("%w: team %s declares %d members, more than its limit of %d", swarm.ErrInvalid, id, len(spec.Members), td.maxMembers)
	}
	for _, m := range spec.Members {
		if err := CheckMemberName(m.Name); err != nil {
			return nil, fmt.Errorf("%w: team %s: member: %w", swarm.ErrInvalid, id, err)
		}
		if _, dup := td.members[m.Name]; dup || m.Name == spec.Lead.Name {
			return nil, fmt.Errorf("%w: team %s: two members are named %q", swarm.ErrDuplicate, id, m.Name)
		}
		a := &swarm.Agent{Name: m.Name, Compaction: m.Compaction, Guardrails: m.Guardrails}
		if err := (strategy.AgentRun{Agent: a, Compaction: spec.Compaction, Strategy: memberStrategy{}}).Check(); err != nil {
			return nil, fmt.Errorf("team %s: member %s: %w", id, m.Name, err)
		}
		td.members[m.Name] = m
		td.order = append(td.order, m.Name)
	}
	return td, nil
}

// CheckMemberName reports whether name can name a team member: 1 to 32
// letters, digits, '_' and '-', which make run ids and mail addresses
// without escaping.
func CheckMemberName(name string) error {
	if name == "" || len(name) > 32 {
		return fmt.Errorf("member name %q must have 1 to 32 characters", name)
	}
	for _, r := range name {
		if !model.NameChar(r) {
			return fmt.Errorf("member name %q may only have letters, digits, '_' and '-'", name)
		}
	}
	return nil
}

// Values of a teammate's run (its start record), which make its plan.
const (
	valMember    = "member"
	valRole      = "role"
	valTeam      = "team"
	valSpawnedBy = "spawned_by"
)

// memberRunID is the run id of teammate name of team run team.
func memberRunID(team, name string) string { return team + "~" + name }

// plan plans a run of the team: the lead's (no member value) or a
// teammate's, each its member's agent driven by the member strategy.
func (t *Team) plan(_ json.RawMessage, values map[string]any) (strategy.AgentRun, error) {
	td := t.td
	if td == nil {
		return strategy.AgentRun{}, fmt.Errorf("%w: team %s is not valid", swarm.ErrInvalid, t.ID())
	}
	name, _ := values[valMember].(string)
	role, _ := values[valRole].(string)
	team, _ := values[valTeam].(string)
	lead := name == ""
	var m Teammate
	a := &swarm.Agent{}
	if lead {
		l := td.lead
		m = Teammate{Name: l.Name, Role: "lead", Instructions: l.Instructions, Model: l.Model, Tools: l.Tools, Compaction: l.Compaction, Guardrails: l.Guardrails}
		a.Hooks, a.Handoffs = l.Hooks, l.Handoffs
	} else {
		var ok bool
		if m, ok = td.members[name]; !ok {
			m = td.template
			m.Name, m.Role = name, role
		}
		if m.Instructions == "" {
			m.Instructions = defaultTeammateInstructions
		}
	}
	tools := slices.Clip(m.Tools)
	if m.PlanApproval {
		tools = make([]swarm.Tool, len(m.Tools))
		for i, t := range m.Tools {
			tools[i] = gatedTool{t}
		}
	}
	a.Name, a.Instructions, a.Model, a.Compaction, a.Guardrails = m.Name, m.Instructions, m.Model, m.Compaction, m.Guardrails
	a.Tools = append(tools, teamTools(lead, m.PlanApproval)...)
	return strategy.AgentRun{
		Agent: a, MaxTurns: td.maxTurns, Guardrails: td.guardrails, Compaction: td.compaction,
		Data:     map[string]any{"Name": m.Name, "Role": m.Role, "Lead": td.lead.Name, "Team": team},
		Strategy: memberStrategy{td: td, lead: lead, member: m, team: team},
	}, nil
}

// teamCtx is what the team tools of a member's run know, carried in the
// context of its steps.
type teamCtx struct {
	d      *strategy.Driver
	rt     *swarm.Runtime
	td     *teamDef
	team   string // the team run id
	self   string // the member's name
	lead   bool
	member Teammate
	teamState
}

type teamKey struct{}

func teamOfCtx(ctx context.Context) (*teamCtx, error) {
	tc, ok := ctx.Value(teamKey{}).(*teamCtx)
	if !ok {
		return nil, fmt.Errorf("%w: team tools work only in a team's runs", ErrNotTeam)
	}
	return tc, nil
}

// teamStores returns the store's mailboxes and team boards, or an error
// naming what the store lacks.
func teamStores(s store.Store) (store.Mailboxes, store.Teams, error) {
	mb, ok := s.(store.Mailboxes)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the store keeps no mailboxes, which teams need", swarm.ErrInvalid)
	}
	tb, ok := s.(store.Teams)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the store keeps no task boards, which teams need", swarm.ErrInvalid)
	}
	return mb, tb, nil
}

// inboxMessage is the user message that gives a member's model mails: their
// text (mailText) and their parts, in order, by reference (the model step
// loads the bytes).
func inboxMessage(mails []store.Mail) model.Message {
	var parts []model.Part
	for _, m := range mails {
		parts = append(parts, m.Parts...)
	}
	return model.Message{Role: model.RoleUser, Content: mailText(mails), Parts: parts}
}

// mailText renders mails as the <inbox> user message a member's model
// sees: one JSON object per line.
func mailText(mails []store.Mail) string {
	var b strings.Builder
	b.WriteString("<inbox>\n")
	for _, m := range mails {
		line := struct {
			From      string `json:"from"`
			Type      string `json:"type"`
			RequestID string `json:"request_id,omitempty"`
			ReplyTo   string `json:"reply_to,omitempty"`
			Content   string `json:"content"`
		}{m.From, m.Type, m.RequestID, m.ReplyTo, m.Content}
		data, _ := json.Marshal(line)
		b.Write(data)
		b.WriteByte('\n')
	}
	b.WriteString("</inbox>")
	return b.String()
}
