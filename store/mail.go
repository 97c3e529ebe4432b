package store

import (
	"errors"
	"fmt"
)

// maxMailHeaderBytes bounds each of a mail's short fields (ID, From, Type,
// RequestID, ReplyTo), so that no field but Content can be large.
const maxMailHeaderBytes = 1 << 10

// CheckMail reports an error if a [Mailboxes.Post] of m to the runs of to
// is bad input, before anything is posted: no recipient, an empty or
// repeated recipient, an empty ID, content over MaxMailBytes or a header
// field over 1 KiB ([ErrTooLarge], naming the first recipient). Stores
// call it first in Post.
func CheckMail(to []string, m Mail) error {
	if len(to) == 0 {
		return fmt.Errorf("post mail %q: no recipient", m.ID)
	}
	seen := make(map[string]struct{}, len(to))
	for i, id := range to {
		if id == "" {
			return fmt.Errorf("post mail %q: recipient %d is empty", m.ID, i)
		}
		if _, dup := seen[id]; dup {
			return fmt.Errorf("post mail %q: run %q named twice", m.ID, id)
		}
		seen[id] = struct{}{}
	}
	if n := len(m.Content); n > MaxMailBytes {
		return fmt.Errorf("post mail %q to run %q: content is %d bytes, the limit is %d: %w", m.ID, to[0], n, MaxMailBytes, ErrTooLarge)
	}
	inline := 0
	for i := range m.Parts {
		p := &m.Parts[i]
		if err := p.Validate(); err != nil {
			return fmt.Errorf("post mail %q: part %d: %w", m.ID, i, err)
		}
		inline += len(p.Data) + len(p.Text)
	}
	if inline > MaxMailBytes {
		return fmt.Errorf("post mail %q to run %q: its parts hold %d bytes inline, the limit is %d (keep large parts as blobs): %w", m.ID, to[0], inline, MaxMailBytes, ErrTooLarge)
	}
	for _, f := range []struct{ name, v string }{
		{"id", m.ID}, {"from", m.From}, {"type", m.Type}, {"request_id", m.RequestID}, {"reply_to", m.ReplyTo},
	} {
		if len(f.v) > maxMailHeaderBytes {
			return fmt.Errorf("post mail to run %q: %s is %d bytes, the limit is %d: %w", to[0], f.name, len(f.v), maxMailHeaderBytes, ErrTooLarge)
		}
	}
	if m.ID == "" {
		return errors.New("post mail: empty id")
	}
	return nil
}
