package store

import (
	"errors"
	"fmt"

	"github.com/swarmrt/swarm/model"
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
	if err := checkParts(m.Parts); err != nil {
		return fmt.Errorf("post mail %q to run %q: %w", m.ID, to[0], err)
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

// CheckMessage reports an error if m, sent to run id's inbox, is bad
// input, before anything is stored: an unknown kind, parts on a stop, an
// invalid part, or parts holding more than MaxMailBytes inline
// ([ErrTooLarge]: large parts go to blobs, and the message holds their
// references). Stores call it first in Send.
func CheckMessage(id string, m Message) error {
	if m.Kind != MsgResume && m.Kind != MsgStop {
		return fmt.Errorf("send to run %q: unknown message kind %q", id, m.Kind)
	}
	if len(m.Parts) > 0 && m.Kind != MsgResume {
		return fmt.Errorf("send to run %q: a %s carries no parts", id, m.Kind)
	}
	if err := checkParts(m.Parts); err != nil {
		return fmt.Errorf("send to run %q: %w", id, err)
	}
	return nil
}

// checkParts reports an invalid part of a mail or an inbox message, or
// parts holding more than MaxMailBytes inline ([ErrTooLarge]).
func checkParts(parts []model.Part) error {
	inline := 0
	for i := range parts {
		p := &parts[i]
		if err := p.Validate(); err != nil {
			return fmt.Errorf("part %d: %w", i, err)
		}
		inline += len(p.Data) + len(p.Text)
	}
	if inline > MaxMailBytes {
		return fmt.Errorf("its parts hold %d bytes inline, the limit is %d (keep large parts as blobs): %w", inline, MaxMailBytes, ErrTooLarge)
	}
	return nil
}
