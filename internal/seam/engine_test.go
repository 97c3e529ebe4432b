package seam

import (
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

func TestHeldWaiting(t *testing.T) {
	now := time.Now()
	held := now.Add(HeldLease)
	for _, c := range []struct {
		name string
		run  store.Run
		want bool
	}{
		{"held with a question", store.Run{State: store.Running, Reason: "may I?", LeaseUntil: held}, true},
		{"held, working", store.Run{State: store.Running, LeaseUntil: held}, false},
		{"a worker's lease with a reason", store.Run{State: store.Running, Reason: "may I?", LeaseUntil: now.Add(time.Hour)}, false},
		{"unowned with a reason", store.Run{State: store.Running, Reason: "may I?"}, false},
		{"paused here", store.Run{State: store.Paused, Reason: "may I?"}, false},
		{"finished, held", store.Run{State: store.Failed, Reason: "boom", LeaseUntil: held}, false},
	} {
		if got := HeldWaiting(c.run); got != c.want {
			t.Errorf("%s: HeldWaiting = %v, want %v", c.name, got, c.want)
		}
	}
}
