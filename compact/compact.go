// Package compact keeps an agent's history within its model's context
// window: its Config says when and how much of a history to summarize, Info
// is what a compacted event journals, and Window is the table of known
// models' windows. The rest is the pure part of compaction that the engine
// (the swarm package) drives: the estimate of a request's tokens (Estimate),
// where to cut a history (Config.Plan), what the summarizer reads
// (Config.Transcript), and how far a history is compacted (State, Stream).
// The engine makes the summary model call and journals it; nothing here
// calls a model, reads a clock or touches a store.
package compact

import (
	"errors"
	"strings"
)

// Config keeps an agent's history within its model's context window: when
// a request would pass the trigger, the older part of the history is
// replaced by a summary made by the model. The system prompt, the first
// message (the task), the last Keep rounds and every tool call with its
// result are kept (the cut is always before a model response, so no tool
// call is separated from its result).
//
// The summary is a model call journaled as a step (a compacted event, with
// the range of messages it replaces and the estimated tokens before and
// after, see Info), so a replay never recomputes it. The journal keeps the
// full history; the run keeps, and snapshots, only the first message, the
// summary and what follows it. Set it on a swarm.Spec (every agent of the
// run) or a swarm.Agent (that agent; it wins over the swarm's).
type Config struct {
	// Window is the model's context window in tokens (0: looked up in the
	// table of known models by the agent's model spec, else 128,000).
	Window int
	// Trigger compacts when a request's estimated tokens pass this
	// fraction of the window (default 0.8).
	Trigger float64
	// Messages compacts when the history holds more messages than this
	// (0: no message-count trigger).
	Messages int
	// Keep is how many of the latest rounds (a model response with its
	// tool results) stay verbatim (default 4).
	Keep int
	// Instructions is the summarizer's system prompt (a default asks to
	// keep facts, decisions, open tasks and tool outcomes).
	Instructions string
}

// Info is what a compacted event records: the messages of the agent's
// history [From, To) newly summarized (index 0 is the task; the summary
// replaces [1, To), as it includes the previous summary), and the
// estimated tokens of the request before and after.
type Info struct {
	From         int `json:"from"`
	To           int `json:"to"`
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
}

// windows are context windows in tokens by model name prefix (longest
// prefix wins).
var windows = map[string]int{
	"gpt-4.1": 1047576, "gpt-4o": 128000, "gpt-4-turbo": 128000, "gpt-4": 8192, "gpt-3.5-turbo": 16385,
	"gpt-5": 400000, "o1": 200000, "o3": 200000, "o4-mini": 200000,
	"claude-": 200000, "gemini-1.5": 1048576, "gemini-2": 1048576, "llama-3": 128000, "mistral-large": 128000,
}

// Window returns the context window of a model spec ("openai:gpt-4o")
// from the table of known models, or 0.
func Window(spec string) int {
	name := spec
	if _, n, ok := strings.Cut(spec, ":"); ok {
		name = n
	}
	best, w := "", 0
	for p, pw := range windows {
		if strings.HasPrefix(name, p) && len(p) > len(best) {
			best, w = p, pw
		}
	}
	return w
}

const defaultSummaryPrompt = "You compact a conversation between a user, an AI agent and its tools. Write a concise summary of the transcript you are given that keeps every fact, decision, result of a tool, open question and remaining task the agent needs to continue. Write only the summary."

// Resolve returns c with its defaults filled in for an agent whose model
// is modelSpec (the window from Window, else 128,000; trigger 0.8; keep 4;
// the default summary prompt), or nil if c is nil. It fails when a number
// is negative or the trigger is above 1.
func (c *Config) Resolve(modelSpec string) (*Config, error) {
	if c == nil {
		return nil, nil
	}
	if c.Window < 0 || c.Trigger < 0 || c.Trigger > 1 || c.Messages < 0 || c.Keep < 0 {
		return nil, errors.New("window, messages and keep must not be negative, and trigger must be within 0 and 1")
	}
	rc := *c
	if rc.Window == 0 {
		if rc.Window = Window(modelSpec); rc.Window == 0 {
			rc.Window = 128000
		}
	}
	if rc.Trigger == 0 {
		rc.Trigger = 0.8
	}
	if rc.Keep == 0 {
		rc.Keep = 4
	}
	if rc.Instructions == "" {
		rc.Instructions = defaultSummaryPrompt
	}
	return &rc, nil
}

// limit is the trigger in tokens.
func (c *Config) limit() int { return int(c.Trigger * float64(c.Window)) }
