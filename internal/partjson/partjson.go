// Package partjson finds the model.Part values of typed Go values and of
// their JSON: a swarm's input or result type may hold parts (fields,
// slices, maps, pointers), which travel in JSON as objects of the part's
// own encoding. The engine uses it to keep large parts as blobs and to
// load them back.
package partjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/swarmrt/swarm/model"
)

// PartType is the reflect.Type of model.Part.
var PartType = reflect.TypeFor[model.Part]()

// partTypes caches Has by type.
var partTypes sync.Map // reflect.Type -> bool

// Has reports whether values of t can hold a model.Part.
func Has(t reflect.Type) bool {
	if v, ok := partTypes.Load(t); ok {
		return v.(bool)
	}
	has := hasPartsIn(t, map[reflect.Type]bool{})
	partTypes.Store(t, has)
	return has
}

func hasPartsIn(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == PartType {
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

// Map calls f on every part the JSON value raw holds (see
// asPart) and returns raw with the parts f changed re-encoded; raw itself
// when f changes none.
func Map(raw json.RawMessage, f func(p *model.Part) (bool, error)) (json.RawMessage, error) {
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

// Walk calls f on every settable model.Part v holds.
func Walk(v reflect.Value, f func(*model.Part) error) error {
	if !Has(v.Type()) {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			return Walk(v.Elem(), f)
		}
	case reflect.Struct:
		if v.Type() == PartType {
			if v.CanAddr() {
				return f(v.Addr().Interface().(*model.Part))
			}
			return nil
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if err := Walk(v.Field(i), f); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := Walk(v.Index(i), f); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			if err := Walk(e, f); err != nil {
				return err
			}
			v.SetMapIndex(it.Key(), e)
		}
	}
	return nil
}

// Schema is the JSON schema of a model.Part in an input or result
// type: its bytes are base64 in data (as encoding/json writes a []byte).
func Schema() *jsonschema.Schema {
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
