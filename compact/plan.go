package compact

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/swarmrt/swarm/model"
)

// Estimate is the estimated token count of a request: about four bytes a
// token, plus a few tokens per message, and each part's tokens (see
// model.Part.Tokens).
func Estimate(system string, tools []model.ToolDef, msgs []model.Message) int {
	n := len(system)
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	for _, m := range msgs {
		n += len(m.Content) + 16
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.ID) + len(c.Arguments)
		}
		for i := range m.Parts {
			n += 4 * m.Parts[i].Tokens()
		}
	}
	return n / 4
}

// Cut is a compaction to make before a request: msgs[From:To) are
// summarized after Prev (the summary of what came before them, or "").
// TokensBefore is the request's estimate without it.
type Cut struct {
	// From and To are the range of messages summarized: From is where
	// the valid state's summary ends (1 if none), To is before a model
	// response.
	From, To int
	// Prev is the summary the new one continues.
	Prev string
	// TokensBefore is the request's estimated tokens before the cut.
	TokensBefore int
}

// Plan returns the messages to send for msgs, a history whose first message
// is the task, as st (its valid state, or nil) compacts them, and the cut
// to make first when that request, with system and tools, would pass c's
// trigger (nil otherwise). c is resolved (see Resolve).
//
// The cut is before the Keep-th latest model response after what is
// compacted already (with fewer rounds than that, half of them).
func (c *Config) Plan(st *State, system string, tools []model.ToolDef, msgs []model.Message) ([]model.Message, *Cut) {
	view := st.View(msgs)
	before := Estimate(system, tools, view)
	if before <= c.limit() && (c.Messages == 0 || len(view) <= c.Messages) {
		return view, nil
	}
	from := 1
	if st != nil {
		from = st.upto
	}
	var starts []int
	for i := from; i < len(msgs); i++ {
		if msgs[i].Role == model.RoleAssistant {
			starts = append(starts, i)
		}
	}
	keep := c.Keep
	if len(starts) <= keep {
		keep = len(starts) / 2
	}
	cut := len(msgs)
	if keep > 0 {
		cut = starts[len(starts)-keep]
	}
	if cut <= from || len(starts) == 0 {
		return view, nil // nothing to compact
	}
	var prev string
	if st != nil {
		prev = st.summary
	}
	if settled := settledCut(msgs, starts); cut > settled && settled > from {
		// Rather cut where later requests repeat the history unchanged
		// (see State.settled), if what that keeps takes at most half the
		// trigger: summarizing it again at the next message would cost
		// more than keeping it.
		rest := Estimate(system+prev, tools, msgs[settled:]) + Estimate("", nil, msgs[:1])
		if rest <= c.limit()/2 && (c.Messages == 0 || len(msgs)-settled < c.Messages/2) {
			cut = settled
		}
	}
	return view, &Cut{From: from, To: cut, Prev: prev, TokensBefore: before}
}

// settledCut is the latest of the cuts starts that is settled, or 0.
func settledCut(msgs []model.Message, starts []int) int {
	u, cut := lastUser(msgs), 0
	for _, s := range starts {
		if s <= u+1 {
			cut = s
		}
	}
	return cut
}

// Transcript is what the summarizer reads, as the user message of a
// request whose system prompt is c.Instructions: prev, then msgs, a line
// each (a tool call a line of its own). When that would pass c's trigger,
// the longest lines are clipped to one length (each with a mark saying
// how much was cut) so that it does not: a single tool result larger than
// the window still makes a request within it. c is resolved (see Resolve).
func (c *Config) Transcript(prev string, msgs []model.Message) string {
	limit := 4*c.limit() - len(c.Instructions) - 16 // bytes, as Estimate counts them
	type line struct{ head, body string }
	var lines []line
	for _, m := range msgs {
		if m.Role == model.RoleTool {
			lines = append(lines, line{fmt.Sprintf("[tool result %s %s] ", m.Name, m.ToolCallID), m.Content})
			continue
		}
		lines = append(lines, line{"[" + string(m.Role) + "] ", m.Content})
		for _, tc := range m.ToolCalls {
			args, _ := json.Marshal(tc.Arguments)
			lines = append(lines, line{fmt.Sprintf("[tool call %s %s] ", tc.Name, tc.ID), string(args)})
		}
	}
	head := "Transcript:\n"
	if prev != "" {
		head = "Summary of the earlier part:\n" + prev + "\n\nTranscript that follows it:\n"
	}
	room, sizes := limit-len(head), make([]int, len(lines))
	for i, l := range lines {
		room -= len(l.head) + 1
		sizes[i] = len(l.body)
	}
	most := fairShare(sizes, room)
	var b strings.Builder
	b.WriteString(head)
	for _, l := range lines {
		b.WriteString(l.head)
		b.WriteString(clipMarked(l.body, most))
		b.WriteByte('\n')
	}
	return b.String()
}

// fairShare is the largest length that sizes can be clipped to for their
// sum to be within room, or -1 if it already is.
func fairShare(sizes []int, room int) int {
	sorted := slices.Sorted(slices.Values(sizes))
	for i, n := range sorted {
		share := room / (len(sorted) - i)
		if n > share {
			return max(share, 0)
		}
		room -= n
	}
	return -1
}

// clipMarked clips s to about n bytes (n < 0: not at all), ending it with
// how much was cut.
func clipMarked(s string, n int) string {
	if n < 0 || len(s) <= n {
		return s
	}
	keep := max(n-48, 0) // room for the mark
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + fmt.Sprintf(" [... %d bytes cut to fit the window]", len(s)-keep)
}
