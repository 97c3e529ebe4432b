package swarm

import (
	"context"
	"fmt"
	"slices"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Parts in delegation.
//
// An agent hands its parts on with its work: an agent it hands off to (in
// the run) and a child swarm it starts (a run of its own) see, with their
// first message, the parts of the calling agent's conversation (the
// run's input parts and those of the tool results it received). A child
// run gets them by reference: it refers to the parent's blobs (RefBlob),
// which are stored once and live as long as either run. A strategy passes
// parts of its choosing with DelegateParts and Child.Parts.

// withHandParts returns ctx under which a handoff passes parts.
func withHandParts(ctx context.Context, parts []model.Part) context.Context {
	return context.WithValue(ctx, seam.HandKey{}, seam.Handing{Parts: parts})
}

// handParts returns the parts a handoff made under ctx passes to its
// target: those set by the calling loop or strategy, the run's input
// parts otherwise.
func (r *runner) handParts(ctx context.Context) []model.Part {
	if h, ok := ctx.Value(seam.HandKey{}).(seam.Handing); ok {
		return h.Parts
	}
	return r.parts
}

// Parts implements strategy.Driver.Parts.
func (d *seamDriver) Parts() []model.Part { return d.r.parts }

// DelegateParts implements strategy.Driver.DelegateParts.
func (d *seamDriver) DelegateParts(ctx context.Context, key, target, request string, parts []model.Part) (string, error) {
	if err := d.r.checkHanded(ctx, parts); err != nil {
		return "", err
	}
	return d.delegate(withHandParts(ctx, parts), "DelegateParts", key, target, request)
}

// checkHanded checks parts a strategy hands to a delegate or child run:
// valid, within the size limit, and a blob reference only to a blob this
// run refers to (a run cannot hand on another run's blobs).
func (r *runner) checkHanded(ctx context.Context, parts []model.Part) error {
	return r.rt.checkRunParts(ctx, r.id, parts)
}

// checkRunParts checks parts given to run id: valid, within the size
// limit, and a blob reference only to a blob run id refers to (no run is
// given another run's blobs).
func (rt *Runtime) checkRunParts(ctx context.Context, id string, parts []model.Part) error {
	for i := range parts {
		p := parts[i]
		if p.Blob == "" {
			if err := checkPart(i, &p); err != nil {
				return err
			}
			continue
		}
		b, ok := rt.blobs()
		if !ok {
			return fmt.Errorf("%w: part %d: a blob reference, and the store keeps no blobs", ErrInvalidInput, i)
		}
		if _, err := b.Blob(ctx, id, p.Blob); err != nil {
			return fmt.Errorf("%w: part %d: blob %s of run %s: %w", ErrInvalidInput, i, p.Blob, id, err)
		}
	}
	return nil
}

// ConversationParts returns the parts of the conversation of the agent
// whose tool call ctx belongs to (the run's input parts, tool results'
// and mails' parts it received), by reference, for a tool to forward
// them (a mail's attachments, say). It returns nil when the strategy did
// not set them (see strategy.WithConversationParts).
func ConversationParts(ctx context.Context) []model.Part {
	h, _ := ctx.Value(seam.HandKey{}).(seam.Handing)
	return h.Parts
}

// mailParts checks a mail's parts and returns them as its recipients'
// mailboxes hold them: each recipient refers to the blobs of the large
// ones, stored once. A reference must name a blob of the run whose tool
// call ctx belongs to.
func (rt *Runtime) mailParts(ctx context.Context, to []string, parts []model.Part) ([]model.Part, error) {
	b, blobs := rt.blobs()
	for i := range parts {
		p := parts[i]
		if p.Blob == "" {
			if err := checkParts([]model.Part{p}); err != nil {
				return nil, fmt.Errorf("part %d: %w", i, err)
			}
			continue
		}
		sender := RunID(ctx)
		switch {
		case !blobs:
			return nil, fmt.Errorf("%w: part %d: a blob reference, and the store keeps no blobs", ErrInvalidInput, i)
		case sender == "":
			return nil, fmt.Errorf("%w: part %d: a blob reference outside a tool call; give the bytes or a URL", ErrInvalidInput, i)
		}
		if _, err := b.Blob(ctx, sender, p.Blob); err != nil {
			return nil, fmt.Errorf("%w: part %d: blob %s of run %s: %w", ErrInvalidInput, i, p.Blob, sender, err)
		}
	}
	if !blobs {
		return parts, nil
	}
	msgs := []model.Message{{Parts: parts}}
	for _, id := range to {
		var err error
		// The first recipient puts the bytes; the others refer to them.
		if msgs, err = store.PutParts(ctx, b, id, msgs); err != nil {
			return nil, fmt.Errorf("store the parts for run %s: %w", id, err)
		}
	}
	return msgs[0].Parts, nil
}

// AttachedParts returns the parts attached (AttachParts) in ctx, a
// context made by WithCallKey: how a program that executes a tool on
// behalf of another process (a node serving a peer's call) gets the
// tool's parts to send back. It returns nil for another context.
func AttachedParts(ctx context.Context) []model.Part {
	ci, ok := ctx.Value(seam.CallKey{}).(*callInfo)
	if !ok {
		return nil
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return slices.Clone(ci.parts)
}
