package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/swarmrt/swarm/internal/partjson"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Typed parts: a swarm's Go input or result type may hold model.Part
// values (fields, slices, maps, pointers). Such a part travels in the
// JSON of the input or result as a JSON object of the part (model.Part's
// own encoding); a large one is kept as a blob of the run and the record
// holds its reference ("blob" and "size"), never its base64. An input's
// parts also reach the orchestrator's first message as real parts, and a
// result's are loaded back into the Go value by Run.Wait and Run.Result.

// inputParts takes the parts out of a typed input: each becomes a part of
// the orchestrator's first message, and in the input a large one is
// replaced by the blob reference it will have (the run is created with
// its bytes as one of its input parts: runBlobs).
func (rt *Runtime) inputParts(input json.RawMessage) (json.RawMessage, []model.Part, error) {
	_, blobs := rt.blobs()
	var parts []model.Part
	n := 0
	out, err := partjson.Map(input, func(p *model.Part) (bool, error) {
		if err := checkParts([]model.Part{*p}); err != nil {
			return false, fmt.Errorf("input part %d: %w", n, err)
		}
		n++
		parts = append(parts, *p)
		if !blobs || len(p.Data) <= store.BlobThreshold {
			return false, nil
		}
		p.Blob, p.Size, p.Data = store.BlobHash(p.Data), int64(len(p.Data)), nil
		return true, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return out, parts, nil
}

// resultParts returns a typed result with its large parts kept as blobs
// of the run, by reference, and every part it holds. A blob reference the
// run does not hold (a model may write any hash) stays in the result but
// is not one of its parts, and its bytes are never loaded.
func (r *runner) resultParts(ctx context.Context, result json.RawMessage) (json.RawMessage, []model.Part, error) {
	b, blobs := r.rt.blobs()
	var parts []model.Part
	out, err := partjson.Map(result, func(p *model.Part) (bool, error) {
		if p.Blob != "" && len(p.Data) == 0 {
			if !blobs {
				return false, nil
			}
			if _, err := b.Blob(ctx, r.id, p.Blob); errors.Is(err, store.ErrNoBlob) {
				return false, nil
			} else if err != nil {
				return false, err
			}
		}
		changed := false
		if blobs && len(p.Data) > store.BlobThreshold {
			hash, err := b.PutBlob(ctx, r.id, p.Data)
			if err != nil {
				return false, err
			}
			p.Blob, p.Size, p.Data = hash, int64(len(p.Data)), nil
			changed = true
		}
		parts = append(parts, *p)
		return changed, nil
	})
	return out, parts, err
}

// loadValueParts loads the bytes of every blob part held by the value v
// points to, as run id sees them.
func (rt *Runtime) loadValueParts(ctx context.Context, id string, v any) error {
	b, ok := rt.blobs()
	if !ok || !partjson.Has(reflect.TypeOf(v)) {
		return nil
	}
	cache := map[string][]byte{}
	return partjson.Walk(reflect.ValueOf(v), func(p *model.Part) error {
		if p.Blob == "" || len(p.Data) > 0 {
			return nil
		}
		msgs, err := store.LoadParts(ctx, b, id, []model.Message{{Parts: []model.Part{*p}}}, cache)
		if errors.Is(err, store.ErrNoBlob) {
			return nil // a reference the run does not hold (see resultParts)
		}
		if err != nil {
			return err
		}
		*p = msgs[0].Parts[0]
		return nil
	})
}
