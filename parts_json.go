package swarm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
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

var partType = reflect.TypeFor[model.Part]()

// partTypes caches hasParts by type.
var partTypes sync.Map // reflect.Type -> bool

// hasParts reports whether values of t can hold a model.Part.
func hasParts(t reflect.Type) bool {
	if v, ok := partTypes.Load(t); ok {
		return v.(bool)
	}
	has := hasPartsIn(t, map[reflect.Type]bool{})
	partTypes.Store(t, has)
	return has
}

func hasPartsIn(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == partType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return hasPartsIn(t.Elem(), seen)
	case reflect.Struct:
		for f := range t.Fields() {
			if f.IsExported() && hasPartsIn(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// partKeys are the JSON keys of a model.Part.
var partKeys = map[string]bool{"type": true, "text": true, "media_type": true, "name": true, "data": true, "url": true, "blob": true, "size": true}

// asPart returns the part a decoded JSON object encodes: an object with
// only a part's keys, of type image, file or audio, with a source.
func asPart(m map[string]any) (model.Part, bool) {
	switch m["type"] {
	case string(model.PartImage), string(model.PartFile), string(model.PartAudio):
	default:
		return model.Part{}, false
	}
	if m["data"] == nil && m["url"] == nil && m["blob"] == nil {
		return model.Part{}, false
	}
	for k := range m {
		if !partKeys[k] {
			return model.Part{}, false
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return model.Part{}, false
	}
	var p model.Part
	if json.Unmarshal(raw, &p) != nil {
		return model.Part{}, false
	}
	return p, true
}

// mapJSONParts calls f on every part the JSON value raw holds (see
// asPart) and returns raw with the parts f changed re-encoded; raw itself
// when f changes none.
func mapJSONParts(raw json.RawMessage, f func(p *model.Part) (bool, error)) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	changed := false
	var walk func(v any) (any, error)
	walk = func(v any) (any, error) {
		switch x := v.(type) {
		case map[string]any:
			if p, ok := asPart(x); ok {
				c, err := f(&p)
				if err != nil || !c {
					return x, err
				}
				changed = true
				return p, nil
			}
			for k, e := range x {
				n, err := walk(e)
				if err != nil {
					return nil, err
				}
				x[k] = n
			}
		case []any:
			for i, e := range x {
				n, err := walk(e)
				if err != nil {
					return nil, err
				}
				x[i] = n
			}
		}
		return v, nil
	}
	v, err := walk(v)
	if err != nil || !changed {
		return raw, err
	}
	return json.Marshal(v)
}

// inputParts takes the parts out of a typed input: each becomes a part of
// the orchestrator's first message, and in the input a large one is
// replaced by the blob reference it will have (putParts keeps its bytes
// as the run's input parts).
func (rt *Runtime) inputParts(input json.RawMessage) (json.RawMessage, []model.Part, error) {
	_, blobs := rt.blobs()
	var parts []model.Part
	n := 0
	out, err := mapJSONParts(input, func(p *model.Part) (bool, error) {
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
	out, err := mapJSONParts(result, func(p *model.Part) (bool, error) {
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
	if !ok || !hasParts(reflect.TypeOf(v)) {
		return nil
	}
	cache := map[string][]byte{}
	return walkParts(reflect.ValueOf(v), func(p *model.Part) error {
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

// walkParts calls f on every settable model.Part v holds.
func walkParts(v reflect.Value, f func(*model.Part) error) error {
	if !hasParts(v.Type()) {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			return walkParts(v.Elem(), f)
		}
	case reflect.Struct:
		if v.Type() == partType {
			if v.CanAddr() {
				return f(v.Addr().Interface().(*model.Part))
			}
			return nil
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if err := walkParts(v.Field(i), f); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := walkParts(v.Index(i), f); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			if err := walkParts(e, f); err != nil {
				return err
			}
			v.SetMapIndex(it.Key(), e)
		}
	}
	return nil
}

// partSchema is the JSON schema of a model.Part in an input or result
// type: its bytes are base64 in data (as encoding/json writes a []byte).
func partSchema() *jsonschema.Schema {
	str := func(desc string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: desc} }
	return &jsonschema.Schema{
		Type:        "object",
		Description: "An image, file or audio part: bytes (data, base64, with media_type), a url, or a blob reference (blob and size).",
		Properties: map[string]*jsonschema.Schema{
			"type":       {Type: "string", Enum: []any{"text", "image", "file", "audio"}},
			"text":       str("the text of a text part"),
			"media_type": str("the IANA media type, such as image/png"),
			"name":       str("a file's name"),
			"data":       {Type: "string", ContentEncoding: "base64", Description: "the bytes, base64"},
			"url":        str("where the bytes are"),
			"blob":       str("the SHA-256 of bytes kept by the run"),
			"size":       {Type: "integer", Description: "the number of bytes of a blob"},
		},
		Required:             []string{"type"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}
