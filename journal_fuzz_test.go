package swarm

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/swarmrt/swarm/model"
)

// FuzzModelResponseJournal runs a model response with arbitrary tool call
// ids and argument bytes through what recordResponse does to it
// (normalizeCalls, then encoding the events) and back through what replay
// does (decodeEvent): encoding never fails, and replay gives back exactly
// the calls the live run used, so that both send the model the same
// messages. Arguments that are not JSON keep their text.
func FuzzModelResponseJournal(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"a": 1, "b": "x<y&z"}`, `{"a":`, `{'a': 1}`, `not json`, ``, ` `, `"text"`, `null`,
		`{"a":1}}`, "\xff\xfe", "{\"a\":\"\xff\"}", `[1,2`, `{"a":"\u00e9\u2028"}`, "{\"a\":\n  2}", `{"a":1,}`,
	} {
		f.Add([]byte(s), "call_1")
	}
	f.Add([]byte(`{"a":`), "")
	f.Add([]byte(`{}`), "call/with/slashes\x00and a NUL")
	f.Fuzz(func(t *testing.T, args []byte, id string) {
		calls := []model.ToolCall{{ID: id, Name: "tool", Arguments: bytes.Clone(args)}, {ID: id, Name: "other", Arguments: bytes.Clone(args)}}
		normalizeCalls(calls, 1)
		if calls[0].ID == calls[1].ID || !goodCallID(calls[0].ID) || !goodCallID(calls[1].ID) {
			t.Fatalf("ids %q %q", calls[0].ID, calls[1].ID)
		}
		if utf8.Valid(args) && !json.Valid(args) && len(args) > 0 && !bytes.Equal(calls[0].Arguments, args) {
			t.Fatalf("arguments %q became %q: their text is lost", args, calls[0].Arguments)
		}
		if json.Valid(args) && !json.Valid(calls[0].Arguments) {
			t.Fatalf("valid arguments %q became invalid %q", args, calls[0].Arguments)
		}
		if again := journaledArgs(calls[0].Arguments); !bytes.Equal(again, calls[0].Arguments) {
			t.Fatalf("journaledArgs is not stable: %q then %q", calls[0].Arguments, again)
		}
		r := &runner{}
		evs := []Event{
			{Type: EventModelResponse, Key: "t1/model", ToolCalls: calls},
			{Type: EventToolCall, Key: "t1/call/" + calls[0].ID, Tool: "tool", CallID: calls[0].ID, Arguments: eventArgs(calls[0].Arguments)},
		}
		for i := range evs {
			rec, err := r.encode(&evs[i], time.Unix(1, 0))
			if err != nil {
				t.Fatalf("encode %s with arguments %q: %v", evs[i].Type, calls[0].Arguments, err)
			}
			if !json.Valid(rec.Data) {
				t.Fatalf("record data is not JSON: %q", rec.Data)
			}
			back, err := decodeEvent(rec)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if i > 0 {
				continue
			}
			if len(back.ToolCalls) != len(calls) {
				t.Fatalf("%d calls back, want %d", len(back.ToolCalls), len(calls))
			}
			for j, c := range back.ToolCalls {
				if c.ID != calls[j].ID || c.Name != calls[j].Name || !bytes.Equal(c.Arguments, calls[j].Arguments) {
					t.Fatalf("replayed call %d = %q %q %q, live %q %q %q", j, c.ID, c.Name, c.Arguments, calls[j].ID, calls[j].Name, calls[j].Arguments)
				}
			}
		}
	})
}

// Nested step key prefixes keep their readable form while short, so that
// journals written before prefixes were bounded keep their keys; deeper
// ones are bounded, and each is a function of its round and call alone.
func TestNestedPathIsShortAndStable(t *testing.T) {
	if got := nestedPath("t3", "call_1"); got != "t3/h/call_1/" {
		t.Errorf("short prefix %q changed", got)
	}
	if got := nestedPath("t1/h/call_a/t2", "call_b"); got != "t1/h/call_a/t2/h/call_b/" {
		t.Errorf("short prefix %q changed", got)
	}
	seen := map[string]bool{}
	path := ""
	for depth := 1; depth <= 200; depth++ {
		id := strings.Repeat(string(rune('a'+depth%26)), 64)
		next := nestedPath(path+"t1", id)
		if next != nestedPath(path+"t1", id) {
			t.Fatal("nestedPath is not deterministic")
		}
		if len(next) > maxPathLen {
			t.Fatalf("depth %d: prefix of %d bytes", depth, len(next))
		}
		if seen[next] {
			t.Fatalf("depth %d: prefix %q repeats", depth, next)
		}
		seen[next] = true
		path = next
	}
}
