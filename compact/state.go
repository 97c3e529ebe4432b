package compact

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/swarmrt/swarm/model"
)

// State is how far a history stream of a run is compacted: the messages
// [1, upto) of its histories are replaced by a summary. A State is never
// changed once made (Next makes a new one), so it can be read without a
// lock once taken from its Stream.
type State struct {
	upto    int // msgs[1:upto] are replaced by summary
	summary string
	print   [32]byte // digest of msgs[:upto], to check the stream is the same
	// settled: what is cut ends at or before the history's last user
	// message, which later requests of the stream repeat unchanged. A
	// conversation's text-only history policy, say, rewrites the agent's
	// tool calls of the message being answered once it is answered: a cut
	// among them holds only while that message is.
	settled bool
	// base is the newest settled state this one builds on (nil for a
	// settled one): what the stream falls back to once this one no
	// longer matches, rather than summarizing the whole history again.
	base *State
}

// Valid returns the newest state of st's chain that matches msgs (the
// messages it replaces are the same), or nil.
func (st *State) Valid(msgs []model.Message) *State {
	for ; st != nil; st = st.base {
		if st.upto <= len(msgs) && fingerprint(msgs[:st.upto]) == st.print {
			return st
		}
	}
	return nil
}

// Next is the state after summarizing msgs[:cut] (as summary) on top of st
// (the valid state, or nil). cut must be within 1 and len(msgs).
func (st *State) Next(msgs []model.Message, cut int, summary string) *State {
	n := &State{upto: cut, summary: summary, print: fingerprint(msgs[:cut]), settled: cut <= lastUser(msgs)+1}
	if !n.settled && st != nil {
		n.base = st
		if !st.settled {
			n.base = st.base
		}
	}
	return n
}

// View is msgs with the compacted part replaced by the summary, folded
// into the first message (st is a valid state, or nil: msgs as they are).
func (st *State) View(msgs []model.Message) []model.Message {
	if st == nil || st.upto == 0 {
		return msgs
	}
	out := make([]model.Message, 0, len(msgs)-st.upto+1)
	first := msgs[0]
	first.Content += "\n\n[Summary of the conversation so far]\n" + st.summary
	out = append(out, first)
	return append(out, msgs[st.upto:]...)
}

// lastUser is the index of the last user message of msgs (0 if none).
func lastUser(msgs []model.Message) int {
	for i := len(msgs) - 1; i > 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return i
		}
	}
	return 0
}

func fingerprint(msgs []model.Message) [32]byte {
	h := sha256.New()
	for _, m := range msgs {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00", m.Role, m.ToolCallID, m.Content, len(m.ToolCalls))
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// Stream is how far one history stream of a run is compacted. It is not
// safe for concurrent use; its State, once read, is.
type Stream struct {
	// State is the stream's newest state (nil: nothing compacted).
	State *State
	// Off is how many messages after the first the stream's histories
	// lack: those its strategy dropped once they were summarized for good
	// (see Drop). The indexes of State are into the histories as they are
	// given; those journaled (Info) count the dropped messages too, so a
	// run journals the same ones whether or not it dropped them.
	Off int
}

// Drop rebases s on h, a history of the stream whose first len(h)
// messages stay as they are (its strategy only appends to it), without
// what its valid state summarizes: it returns that history, whose first
// message and summary then stand for what was dropped (h as it is when
// nothing is summarized). A strategy that drops what is summarized keeps
// its history, its snapshots and the checks of the prefix a summary
// replaces the size of what is not summarized yet, however long the run.
func (s *Stream) Drop(h []model.Message) []model.Message {
	st := s.State.Valid(h)
	if st == nil || st.upto <= 1 {
		return h
	}
	d := st.upto - 1
	out := make([]model.Message, 0, len(h)-d)
	out = append(append(out, h[0]), h[1+d:]...)
	// What stays as it is is settled; states of other cuts are no longer
	// needed (those before it were replaced by it, those after it do
	// not match h).
	s.State = &State{upto: 1, summary: st.summary, print: fingerprint(out[:1]), settled: true}
	s.Off += d
	return out
}

// snap is a State as a snapshot holds it, and for the newest of a stream
// the stream's Off.
type snap struct {
	Upto    int    `json:"upto"`
	Summary string `json:"summary"`
	Print   []byte `json:"print"`
	Settled bool   `json:"settled,omitempty"`
	Base    *snap  `json:"base,omitempty"`
	Off     int    `json:"off,omitempty"`
}

func snapOf(st *State) *snap {
	if st == nil {
		return nil
	}
	return &snap{Upto: st.upto, Summary: st.summary, Print: st.print[:], Settled: st.settled, Base: snapOf(st.base)}
}

func (c *snap) state() *State {
	if c == nil {
		return nil
	}
	st := &State{upto: c.Upto, summary: c.Summary, settled: c.Settled, base: c.Base.state()}
	copy(st.print[:], c.Print)
	return st
}

// MarshalJSON encodes s as a run's snapshot holds it: its state's chain
// and its offset (null when nothing is compacted).
func (s Stream) MarshalJSON() ([]byte, error) {
	c := snapOf(s.State)
	if c == nil {
		return []byte("null"), nil
	}
	c.Off = s.Off
	return json.Marshal(c)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (s *Stream) UnmarshalJSON(data []byte) error {
	var c *snap
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("compaction state: %w", err)
	}
	*s = Stream{}
	if c != nil {
		s.State, s.Off = c.state(), c.Off
	}
	return nil
}
