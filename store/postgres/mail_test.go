package postgres_test

import (
	"testing"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	"github.com/swarmrt/swarm/store/storetest"
)

// handles opens n Stores, each with a pool of its own, on one new schema:
// n nodes.
func handles(t testing.TB, n int) []store.Store {
	t.Helper()
	url := pgtest.URL(t, "pool_max_conns=4")
	out := make([]store.Store, n)
	for i := range out {
		s := open(t, url)
		t.Cleanup(func() { s.Close() })
		out[i] = s
	}
	return out
}

// TestMailFourHandles: four nodes post 2,500 mails each to one run while a
// fifth drains it: every mail is consumed exactly once, each sender's in
// order.
func TestMailFourHandles(t *testing.T) {
	hs := handles(t, 5)
	storetest.MailConcurrency(t, hs[4], hs[:4], storetest.MailPerSender())
}

// BenchmarkMailLatency: post one mail through one node, see it and hear
// of it (LISTEN/NOTIFY) on another.
func BenchmarkMailLatency(b *testing.B) {
	hs := handles(b, 2)
	storetest.BenchmarkMailLatency(b, hs[0], hs[1])
}

// BenchmarkMailThroughput: four nodes post into one mailbox that a fifth
// drains.
func BenchmarkMailThroughput(b *testing.B) {
	hs := handles(b, 5)
	storetest.BenchmarkMailThroughput(b, hs[4], hs[:4])
}
