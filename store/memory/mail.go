package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/swarmrt/swarm/store"
)

// mailbox is a run's mailbox: mails[i] has Seq i+1.
type mailbox struct {
	mails []store.Mail
	ids   map[string]int64 // mail ID -> Seq
	acked int64
}

// ackMail advances the mailbox cursor to seq, never back nor past the last
// mail. The caller holds r.mu.
func (r *run) ackMail(seq int64) {
	if r.mbox == nil || seq <= r.mbox.acked {
		return
	}
	r.mbox.acked = min(seq, int64(len(r.mbox.mails)))
}

// Post implements store.Mailboxes. It holds the locks of every recipient,
// taken in creation order, while it checks and posts, so a post is all or
// nothing and posts to one mailbox are totally ordered.
func (s *Store) Post(ctx context.Context, to []string, m store.Mail) (_ []store.Mail, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.CheckMail(to, m); err != nil {
		return nil, err
	}
	m.Parts = slices.Clone(m.Parts) // the caller's slice is not kept
	runs := make([]*run, len(to))
	for i, id := range to {
		if runs[i], err = s.lookup(id); err != nil {
			return nil, fmt.Errorf("post mail %q: %w", m.ID, err)
		}
	}
	locked := slices.Clone(runs)
	slices.SortFunc(locked, func(a, b *run) int { return cmp.Compare(a.order, b.order) })
	for _, r := range locked {
		r.mu.Lock()
	}
	// posted[i]: the mail is new in to[i]'s mailbox; woke[i]: it woke
	// to[i] up.
	posted, woke := make([]bool, len(to)), make([]bool, len(to))
	out := make([]store.Mail, len(to))
	func() {
		defer func() {
			for _, r := range locked {
				r.mu.Unlock()
			}
		}()
		for i, r := range runs {
			if st := r.row.State; st.Terminal() {
				err = fmt.Errorf("post mail %q to run %q in state %s: %w", m.ID, to[i], st, store.ErrInvalidState)
				return
			}
		}
		now := time.Now()
		for i, r := range runs {
			if r.mbox == nil {
				r.mbox = &mailbox{ids: map[string]int64{}}
			}
			if seq, dup := r.mbox.ids[m.ID]; dup {
				out[i] = r.mbox.mails[seq-1]
				continue
			}
			nm := m
			nm.Seq = int64(len(r.mbox.mails)) + 1
			nm.Time = now
			r.mbox.mails = append(r.mbox.mails, nm)
			r.mbox.ids[m.ID] = nm.Seq
			out[i] = nm
			posted[i] = true
			woke[i] = r.deliver(now, store.WaitsForMail(r.row.State, r.row.Reason))
		}
	}()
	if err != nil {
		return nil, err
	}
	for i, id := range to {
		if posted[i] {
			s.hub.PublishSend(id, woke[i])
		}
	}
	return out, nil
}

// Mailbox implements store.Mailboxes.
func (s *Store) Mailbox(ctx context.Context, id string, limit int) ([]store.Mail, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	r, err := s.lookup(id)
	if err != nil {
		return nil, 0, fmt.Errorf("mailbox: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mbox == nil {
		return []store.Mail{}, 0, nil
	}
	src := r.mbox.mails[r.mbox.acked:]
	if limit > 0 && len(src) > limit {
		src = src[:limit]
	}
	return slices.Clone(src), r.mbox.acked, nil
}
