package compact

import (
	"encoding/json"
	"testing"

	"github.com/swarmrt/swarm/model"
)

// A Stream is encoded in a run's snapshot as the engine wrote it before
// compaction had a package of its own (its state's chain, with the
// stream's offset at the top), so snapshots taken then are read now and
// the other way round.
func TestStreamSnapshotEncoding(t *testing.T) {
	msgs := []model.Message{
		{Role: model.RoleUser, Content: "task"},
		{Role: model.RoleAssistant, Content: "a"},
		{Role: model.RoleUser, Content: "next"},
		{Role: model.RoleAssistant, Content: "b"},
		{Role: model.RoleAssistant, Content: "c"},
	}
	settled := (*State)(nil).Next(msgs, 2, "first")
	open := settled.Next(msgs, 5, "second") // after the last user message: not settled
	const want = `{"upto":5,"summary":"second","print":"3rSskPODuXYErmPrhN4WfAqrKt+RnyaktSA99m33L2E=",` +
		`"base":{"upto":2,"summary":"first","print":"okU3bv+cjqBwiLUnlHmUpcaEn5hotlsRtCZMNcn21Wo=","settled":true},"off":3}`
	got, err := json.Marshal(Stream{State: open, Off: 3})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", got, want)
	}
	var back Stream
	if err := json.Unmarshal([]byte(want), &back); err != nil {
		t.Fatal(err)
	}
	if back.Off != 3 || back.State.Valid(msgs) == nil || back.State.Valid(msgs).summary != "second" {
		t.Fatalf("decoded %+v: not the state encoded", back)
	}
	if v := back.State.Valid(msgs[:4]); v == nil || v.summary != "first" {
		t.Fatalf("decoded state falls back to %+v, want the settled one", v)
	}
	if got, _ := json.Marshal(Stream{}); string(got) != "null" {
		t.Errorf("empty stream encoded as %s, want null", got)
	}
}
