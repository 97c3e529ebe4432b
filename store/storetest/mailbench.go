package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

// BenchmarkMailLatency measures, for one mail at a time, how long it takes
// from the start of a Post through poster until the mail is visible in a
// Mailbox read through reader right after Post returns ("visible"), and,
// when reader is a store.Watcher, until reader's watcher hears of it
// ("notified"): an idle teammate's wake-up on another node. It reports
// the 50th and 99th percentiles in microseconds. poster and reader share
// their data; reader drives the run and acknowledges each mail, so that
// the mailbox stays short.
func BenchmarkMailLatency(b *testing.B, poster, reader store.Store) {
	pm, rm := mailboxes(b, poster), mailboxes(b, reader)
	ctx := b.Context()
	id := fmt.Sprintf("latency-%d", time.Now().UnixNano())
	l, err := reader.Create(ctx, newRun(id), "reader", long, nil)
	if err != nil {
		b.Fatal(err)
	}
	var heard chan struct{}
	if w, ok := reader.(store.Watcher); ok {
		heard = make(chan struct{}, 1)
		err := w.Watch(ctx, func(c store.Change) {
			if c.RunID == id && c.Kind == store.ChangeInbox {
				select {
				case heard <- struct{}{}:
				default:
				}
			}
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	var visible, notified []time.Duration
	n := 0
	for b.Loop() {
		n++
		if heard != nil {
			select { // a late repeat of the previous mail's notification
			case <-heard:
			default:
			}
		}
		start := time.Now()
		if _, err := pm.Post(ctx, []string{id}, store.Mail{ID: fmt.Sprint(n), Type: "message", Content: "ping"}); err != nil {
			b.Fatal(err)
		}
		ms, _, err := rm.Mailbox(ctx, id, 0)
		if err != nil || len(ms) != 1 || ms[0].ID != fmt.Sprint(n) {
			b.Fatalf("Mailbox after Post %d: %+v, %v", n, ms, err)
		}
		visible = append(visible, time.Since(start))
		if heard != nil {
			select {
			case <-heard:
				notified = append(notified, time.Since(start))
			case <-time.After(watchWait):
				b.Fatalf("no notification of mail %d", n)
			}
		}
		if _, err := reader.Append(ctx, l, nil, store.Update{AckMail: ms[0].Seq}); err != nil {
			b.Fatal(err)
		}
	}
	report := func(name string, ds []time.Duration) {
		if len(ds) == 0 {
			return
		}
		slices.Sort(ds)
		at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) }
		b.ReportMetric(at(0.50), name+"-p50-µs")
		b.ReportMetric(at(0.99), name+"-p99-µs")
	}
	b.ReportMetric(0, "ns/op")
	report("visible", visible)
	report("notified", notified)
}

// BenchmarkMailThroughput runs [MailConcurrency] with the senders and
// reports the mails per second posted into one mailbox and drained.
func BenchmarkMailThroughput(b *testing.B, consumer store.Store, senders []store.Store) {
	var (
		elapsed time.Duration
		mails   int
	)
	for b.Loop() {
		elapsed += MailConcurrency(b, consumer, senders, MailPerSender())
		mails += len(senders) * MailPerSender()
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(mails)/elapsed.Seconds(), "mails/s")
}
