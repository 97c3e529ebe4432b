package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Multimodal parts (images, files, audio) in runs.
//
// A run's input and its tools' results may carry [model.Part]s. The bytes
// of a part over store.BlobThreshold are kept once in the store's blob
// table (store.Blobs) and the journal, snapshots and events hold only a
// reference (Part.Blob, its SHA-256, and Size); the bytes are loaded back
// just before a model call, once per run. A store without blobs keeps the
// parts inline.

// WithParts attaches parts (images, files, audio) to a run's input: the
// orchestrator's first message carries them after the input text. Each
// part must be valid ([model.Part.Validate]) and hold its bytes or a URL;
// the run refuses them otherwise ([ErrInvalidInput]) and creates nothing.
func WithParts(parts ...model.Part) StartOption {
	return func(c *startConfig) { c.parts = append(c.parts, parts...) }
}

// AttachParts adds parts to the result of the tool call ctx belongs to:
// a tool's Call returns its text and calls AttachParts for an image, a
// chart or a file, which the model receives with the text in its next
// call. It reports an error for an invalid part, and outside a tool call.
func AttachParts(ctx context.Context, parts ...model.Part) error {
	return attach(ctx, "AttachParts", func(ci *callInfo) *[]model.Part { return &ci.parts }, parts)
}

// attach adds parts, once checked, to the list of the tool call ctx
// belongs to that field picks; fn names the caller in its errors.
func attach(ctx context.Context, fn string, field func(*callInfo) *[]model.Part, parts []model.Part) error {
	ci, ok := ctx.Value(seam.CallKey{}).(*callInfo)
	if !ok {
		return fmt.Errorf("swarm: %s outside a tool call", fn)
	}
	if err := checkParts(parts); err != nil {
		return err
	}
	ci.mu.Lock()
	*field(ci) = append(*field(ci), parts...)
	ci.mu.Unlock()
	return nil
}

// checkParts validates parts given to a run: no unresolved blob
// references (a caller cannot name another run's blobs).
func checkParts(parts []model.Part) error {
	for i := range parts {
		if err := checkPart(i, &parts[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkPart checks p, part i of the parts given to a run, as checkParts
// does.
func checkPart(i int, p *model.Part) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%w: part %d: %w", ErrInvalidInput, i, err)
	}
	if p.Blob != "" {
		return fmt.Errorf("%w: part %d: a blob reference; give the bytes or a URL", ErrInvalidInput, i)
	}
	if p.Len() > store.MaxBlobBytes {
		return fmt.Errorf("%w: part %d: %d bytes, over the limit of %d: %w", ErrInvalidInput, i, p.Len(), store.MaxBlobBytes, store.ErrTooLarge)
	}
	return nil
}

// blobs returns the runtime's store as store.Blobs, if it keeps blobs.
func (rt *Runtime) blobs() (store.Blobs, bool) {
	b, ok := rt.store.(store.Blobs)
	return b, ok
}

// refParts returns parts with each large one replaced by the reference
// to the blob the run is created with (runBlobs): what a start record
// holds.
func (rt *Runtime) refParts(parts []model.Part) []model.Part {
	if _, ok := rt.blobs(); !ok || len(parts) == 0 {
		return parts
	}
	out := slices.Clone(parts)
	for i := range out {
		if p := &out[i]; len(p.Data) > store.BlobThreshold {
			p.Blob, p.Size, p.Data = store.BlobHash(p.Data), int64(len(p.Data)), nil
		}
	}
	return out
}

// runBlobs returns the blobs a run whose input has parts is created with
// (store.Run.Blobs): the bytes of the large ones (refParts) and the blobs
// of those given by reference (a parent's, handed to a child run). The
// store keeps them with the start record, in one transaction, so that no
// record names a blob that is not kept, whenever the process dies.
func (rt *Runtime) runBlobs(parts []model.Part) []store.BlobRef {
	if _, ok := rt.blobs(); !ok {
		return nil
	}
	var out []store.BlobRef
	for _, p := range parts {
		switch {
		case p.Blob != "":
			out = append(out, store.BlobRef{Hash: p.Blob})
		case len(p.Data) > store.BlobThreshold:
			out = append(out, store.BlobRef{Data: p.Data})
		}
	}
	return out
}

// storeParts returns parts as a record holds them: the large ones kept in
// the blob store for this run, by reference.
func (r *runner) storeParts(ctx context.Context, parts []model.Part) ([]model.Part, error) {
	return r.rt.storeParts(ctx, r.id, parts)
}

// storeParts returns parts as a record or an inbox message of run id holds
// them: the large ones kept in the blob store for the run, by reference.
func (rt *Runtime) storeParts(ctx context.Context, id string, parts []model.Part) ([]model.Part, error) {
	b, ok := rt.blobs()
	if !ok || len(parts) == 0 {
		return parts, nil
	}
	msgs, err := store.PutParts(ctx, b, id, []model.Message{{Parts: parts}})
	if err != nil {
		return nil, err
	}
	return msgs[0].Parts, nil
}

// loadParts returns msgs with the bytes of their blob references loaded,
// for a model call: each blob is read from the store once per runner.
// msgs itself (kept by the strategy, and snapshotted) keeps references.
func (r *runner) loadParts(ctx context.Context, msgs []model.Message) ([]model.Message, error) {
	b, ok := r.rt.blobs()
	if !ok || !hasBlobs(msgs) {
		return msgs, nil
	}
	r.blobMu.Lock()
	defer r.blobMu.Unlock()
	if r.blobCache == nil {
		r.blobCache = map[string][]byte{}
	}
	out, err := store.LoadParts(ctx, b, r.id, msgs, r.blobCache)
	if err != nil {
		return nil, &seam.Interrupted{Err: fmt.Errorf("load the parts of run %s: %w", r.id, err)}
	}
	n := 0
	for _, data := range r.blobCache {
		n += len(data)
	}
	if n > maxBlobCache {
		r.blobCache = nil // the request keeps its bytes; later ones load again
	}
	return out, nil
}

// maxBlobCache bounds the bytes of blobs a runner keeps loaded.
const maxBlobCache = 64 << 20

func hasBlobs(msgs []model.Message) bool {
	for i := range msgs {
		for j := range msgs[i].Parts {
			if msgs[i].Parts[j].Blob != "" {
				return true
			}
		}
	}
	return false
}

// sharedBlobs returns the blobs the records refer to, for a fork created
// with them (store.Run.Blobs): a fork shares its origin's blobs, which
// then live as long as either run.
func (rt *Runtime) sharedBlobs(records []store.Record) []store.BlobRef {
	if _, ok := rt.blobs(); !ok {
		return nil
	}
	var out []store.BlobRef
	seen := map[string]bool{}
	for _, rec := range records {
		var ev struct {
			Parts       []model.Part `json:"parts"`
			ResultParts []model.Part `json:"result_parts"`
		}
		if json.Unmarshal(rec.Data, &ev) != nil {
			continue
		}
		for _, p := range append(ev.Parts, ev.ResultParts...) {
			if p.Blob == "" || seen[p.Blob] {
				continue
			}
			seen[p.Blob] = true
			out = append(out, store.BlobRef{Hash: p.Blob})
		}
	}
	return out
}

// AttachOutput adds parts to the result of the run the tool call ctx
// belongs to: a tool that renders a chart, a report or a recording calls
// it, and once the run completes [Completed.Parts] (and Status.Parts, the
// HTTP API, A2A artifacts and MCP content) holds them, in the order their
// calls were recorded. The model does not see them; use AttachParts for
// that. Large parts are kept once as blobs of the run and journaled by
// reference. It reports an error for an invalid part, and outside a tool
// call.
func AttachOutput(ctx context.Context, parts ...model.Part) error {
	return attach(ctx, "AttachOutput", func(ci *callInfo) *[]model.Part { return &ci.out }, parts)
}

// keyedParts are the result parts of the tool call recorded at Key.
type keyedParts struct {
	Key   string       `json:"key"`
	Parts []model.Part `json:"parts"`
}

// noteOutput records the result parts of the tool call at key, recorded
// live or replayed; a key already noted (from a snapshot) is kept.
func (r *runner) noteOutput(key string, parts []model.Part) {
	if len(parts) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.outParts {
		if k.Key == key {
			return
		}
	}
	r.outParts = append(r.outParts, keyedParts{Key: key, Parts: parts})
}

// completedParts returns a run's result as its completed record holds it
// (a typed result's large parts by blob reference) and the run's result
// parts: the tools' (AttachOutput), then the typed result's.
func (r *runner) completedParts(ctx context.Context, result json.RawMessage) (json.RawMessage, []model.Part, error) {
	r.mu.Lock()
	var parts []model.Part
	for _, k := range r.outParts {
		parts = append(parts, k.Parts...)
	}
	r.mu.Unlock()
	if r.info.outParts {
		res, typed, err := r.resultParts(ctx, result)
		if err != nil {
			return nil, nil, err
		}
		result, parts = res, append(parts, typed...)
	}
	return result, parts, nil
}

// resultPartsOf returns the result parts of completed run id, from its
// completed record (at seq last), by reference.
func (rt *Runtime) resultPartsOf(ctx context.Context, id string, last int64) ([]model.Part, error) {
	recs, err := rt.store.Read(ctx, id, last-1, 1)
	if err != nil || len(recs) == 0 || EventType(recs[0].Type) != EventCompleted {
		return nil, err
	}
	ev, err := decodeEvent(recs[0])
	if err != nil {
		return nil, err
	}
	return ev.Parts, nil
}

// loadedResult is the typed result of s with the bytes of its parts
// loaded: Completed.Parts and the parts Output holds.
func loadedResult[Out any](ctx context.Context, rt *Runtime, s Status) (Result[Out], error) {
	res, err := resultOf[Out](s)
	if err != nil {
		return nil, err
	}
	c, ok := res.(Completed[Out])
	if !ok {
		return res, nil
	}
	if b, ok := rt.blobs(); ok && hasBlobs([]model.Message{{Parts: c.Parts}}) {
		msgs, err := store.LoadParts(ctx, b, s.ID, []model.Message{{Parts: c.Parts}}, nil)
		if err != nil {
			return nil, fmt.Errorf("run %s: load the result's parts: %w", s.ID, err)
		}
		c.Parts = msgs[0].Parts
	}
	if err := rt.loadValueParts(ctx, s.ID, &c.Output); err != nil {
		return nil, fmt.Errorf("run %s: load the result's parts: %w", s.ID, err)
	}
	return c, nil
}
