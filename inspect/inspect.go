// Package inspect describes a model call of a run as the model received it
// (see swarm's Runtime.Request, which rebuilds it from the run's journal):
// the rendered instructions, the conversation after history filtering and
// compaction, the tools offered, estimates of their tokens part by part,
// and whether the rebuilt request is verified against the digest the
// journal holds with the call's response ([Hash]).
package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

	"github.com/swarmrt/swarm/model"
)

// Request is a model call of a run as the provider received it: the
// rendered instructions (System), the conversation after history filtering
// and compaction, the tools offered, and token counts per part.
type Request struct {
	// RunID and Key name the call: its model_response record.
	RunID string `json:"run_id"`
	Key   string `json:"key"`
	// Agent made the call; Call counts its earlier calls in the run.
	Agent string `json:"agent"`
	Call  int    `json:"call"`
	// System is the system prompt.
	System string `json:"system"`
	// Messages is the conversation the model was given.
	Messages []model.Message `json:"messages"`
	// Tools are the tools offered, with their JSON schemas.
	Tools []model.ToolDef `json:"tools"`
	// ResultSchema is the schema a final answer was asked to conform to.
	ResultSchema json.RawMessage `json:"result_schema,omitempty"`
	// Tokens counts the request's tokens, part by part.
	Tokens Tokens `json:"tokens"`
	// Check says whether the rebuilt request is the one sent, as the
	// digest journaled with the response shows: [Verified] (it is),
	// [Differs] (it is not: the swarm's definition or a dynamic tool set
	// changed since the call), or [Unverified] (the journal holds no
	// digest: the run was recorded before digests were).
	Check string `json:"check"`
}

// The values of Request.Check.
const (
	Verified   = "verified"
	Differs    = "differs"
	Unverified = "unverified"
)

// Hash is the digest of req journaled with its response: sha256 of its
// system prompt, messages, tools and result schema as JSON, the first 16
// bytes in hex ("" if req cannot be encoded: unverifiable rather than a
// failed call).
func Hash(req *model.Request) string {
	b, err := json.Marshal(struct {
		System       string          `json:"system"`
		Messages     []model.Message `json:"messages"`
		Tools        []model.ToolDef `json:"tools"`
		ResultSchema json.RawMessage `json:"result_schema,omitempty"`
	}{req.System, req.Messages, req.Tools, req.ResultSchema})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Tokens counts the tokens of a request. The counts per part are estimates
// (see Estimate); Reported is what the provider counted.
type Tokens struct {
	// Estimate says how the parts were counted: "chars/4", a quarter of
	// the characters of each part's text (its JSON for tool calls and
	// tool definitions), rounded up, and for images, files and audio
	// model.Part.Tokens. No tokenizer is involved.
	Estimate string `json:"estimate"`
	// System, Messages (one per message) and Tools (one per tool) are
	// the estimates per part; Total is their sum.
	System   int   `json:"system"`
	Messages []int `json:"messages"`
	Tools    []int `json:"tools"`
	Total    int   `json:"total"`
	// Reported is the input tokens the provider reported for the call,
	// 0 when it reported none.
	Reported int64 `json:"reported,omitempty"`
}

// Count estimates the tokens of each part of req (see [Tokens]); Reported
// is left to the caller.
func Count(req *Request) Tokens {
	t := Tokens{Estimate: "chars/4", System: estimate(req.System),
		Messages: make([]int, len(req.Messages)), Tools: make([]int, len(req.Tools))}
	t.Total = t.System
	for i, m := range req.Messages {
		n := estimate(m.Content)
		for j := range m.Parts {
			n += m.Parts[j].Tokens()
		}
		if len(m.ToolCalls) > 0 {
			b, _ := json.Marshal(m.ToolCalls)
			n += estimate(string(b))
		}
		t.Messages[i] = n
		t.Total += n
	}
	for i, d := range req.Tools {
		b, _ := json.Marshal(d)
		t.Tools[i] = estimate(string(b))
		t.Total += t.Tools[i]
	}
	return t
}

// estimate is a quarter of the characters of s, rounded up.
func estimate(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }
