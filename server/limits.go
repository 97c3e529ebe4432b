package server

import (
	"context"

	"github.com/swarmrt/swarm"
)

// CallLimits is where a run tree stands against its call limits (see
// swarm.Budget): the calls its runs have taken from the tree's pool, and
// the limits. In a PerWork tree (a conversation's, a team's) they are the
// calls of its current piece of outside work, which starts again at each
// user message, each user's mail or task a member takes up and each
// resume of a pause on the cap; otherwise those of the tree's whole life.
// A limit of 0 is none. Taken calls are those made and those reserved in
// blocks not made yet, so a tree may stop a few calls before its limit.
type CallLimits struct {
	ModelCalls    int64 `json:"model_calls"`
	MaxModelCalls int64 `json:"max_model_calls,omitempty"`
	ToolCalls     int64 `json:"tool_calls"`
	MaxToolCalls  int64 `json:"max_tool_calls,omitempty"`
	// PerWork: the limits count per piece of outside work.
	PerWork bool `json:"per_work,omitempty"`
	// Lifted: a resume lifted the tree's budget; no limit applies.
	Lifted bool `json:"lifted,omitempty"`
}

// Limits returns where the tree of run id stands against its call limits
// (what GET /v1/runs/{id} shows as limits), or nil for a run journaled
// before runs had them.
func Limits(ctx context.Context, rt *swarm.Runtime, id string) (*CallLimits, error) {
	b, p, err := rt.TreeBudget(ctx, id)
	if err != nil || b == nil {
		return nil, err
	}
	return &CallLimits{ModelCalls: p.Calls, MaxModelCalls: max(b.ModelCalls, 0), ToolCalls: p.Tools, MaxToolCalls: max(b.ToolCalls, 0),
		PerWork: b.PerWork, Lifted: p.Lifted}, nil
}
