package adaptive

import (
	"encoding/json"
	"fmt"
	"strings"
)

// transcript is the rounds so far, as prompts show them.
func (x *run) transcript() string {
	if len(x.rounds) == 0 {
		return "No rounds yet.\n"
	}
	var b strings.Builder
	for _, o := range x.rounds {
		status := "answered"
		if o.isError {
			status = "failed"
		}
		fmt.Fprintf(&b, "Round %d: %s was asked: %s\n%s %s: %s\n\n", o.n, o.agent, o.instruction, o.agent, status, o.output)
	}
	return b.String()
}

func (x *run) context() string {
	return "Task:\n" + x.task + "\n\nTeam:\n" + x.teamText + "\n" + x.ledger.text() + "\nRounds so far:\n" + x.transcript()
}

func (x *run) ledgerPrompt(cause, feedback string) string {
	switch cause {
	case "start":
		return "Task:\n" + x.task + "\n\nTeam:\n" + x.teamText + "\nBefore starting, list the facts given in the task, the facts to look up, and the facts to derive; then make a short plan, as steps, for the team. " + ledgerReply
	case "review":
		return x.context() + "\nA human reviewed the plan and answered:\n" + feedback + "\n\nUpdate the facts and the plan accordingly. " + ledgerReply
	}
	return x.context() + "\nThe work is stalled: the last rounds made no progress or went in circles. Update the facts with what was learned, then make a new plan that avoids what did not work. " + ledgerReply
}

const ledgerReply = `Reply with only a JSON object: {"facts": {"given": [...], "to_look_up": [...], "derived": [...]}, "plan": ["step", ...]}.`

func (x *run) progressPrompt() string {
	return x.context() + "\nJudge the work so far and choose the next step. Reply with only a JSON object: " +
		`{"is_request_satisfied": bool, "is_in_loop": bool, "is_progress_being_made": bool, "next_handoff": "<one of: ` + strings.Join(x.team, ", ") +
		`>", "instruction": "<what that member should do next>", "reason": "<one sentence>"}.`
}

func (x *run) pickPrompt() string {
	return x.context() + "\nChoose the next step. Reply with only a JSON object: " +
		`{"next_handoff": "<one of: ` + strings.Join(x.team, ", ") + `>", "instruction": "<what that member should do next>"}.`
}

func (x *run) judgePrompt() string {
	return x.context() + "\nYou judge the team's progress. Reply with only a JSON object: " +
		`{"is_request_satisfied": bool, "is_in_loop": bool, "is_progress_being_made": bool, "reason": "<one sentence>"}.`
}

func (x *run) finalPrompt(code, detail string) string {
	p := x.context() + "\n"
	if code != exitSatisfied {
		p += "The work has to stop now (" + detail + "). "
	}
	p += "Give the final answer to the task, based on the rounds above."
	if schema := x.d.ResultSchema(); schema != nil {
		p += " Reply with only a JSON value matching this schema: " + string(schema)
	}
	return p
}

// system is added to the orchestrator's system prompt in its ledger calls.
const system = "You orchestrate a team: you keep a ledger of facts and a plan, judge progress after each round, and direct one team member per round with a precise instruction."

// The structured-output schemas of the adaptive prompts.
var (
	ledgerSchema   = json.RawMessage(`{"type":"object","properties":{"facts":{"type":"object","properties":{"given":{"type":"array","items":{"type":"string"}},"to_look_up":{"type":"array","items":{"type":"string"}},"derived":{"type":"array","items":{"type":"string"}}}},"plan":{"type":"array","items":{"type":"string"}}},"required":["facts","plan"]}`)
	judgeSchema    = json.RawMessage(`{"type":"object","properties":{"is_request_satisfied":{"type":"boolean"},"is_in_loop":{"type":"boolean"},"is_progress_being_made":{"type":"boolean"},"reason":{"type":"string"}},"required":["is_request_satisfied","is_in_loop","is_progress_being_made"]}`)
	pickSchema     = json.RawMessage(`{"type":"object","properties":{"next_handoff":{"type":"string"},"instruction":{"type":"string"}},"required":["next_handoff","instruction"]}`)
	progressSchema = json.RawMessage(`{"type":"object","properties":{"is_request_satisfied":{"type":"boolean"},"is_in_loop":{"type":"boolean"},"is_progress_being_made":{"type":"boolean"},"next_handoff":{"type":"string"},"instruction":{"type":"string"},"reason":{"type":"string"}},"required":["is_request_satisfied","is_in_loop","is_progress_being_made","next_handoff","instruction"]}`)
)
