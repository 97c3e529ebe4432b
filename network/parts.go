package network

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// FilePart is an image, file or audio of a call or its result, in the
// shape of A2A's FilePart: the bytes in base64, or a URI, with a name and
// a media type.
type FilePart struct {
	// Kind is "file".
	Kind string   `json:"kind"`
	File FileData `json:"file"`
}

// FileData is the content of a [FilePart]: Bytes (standard base64) or
// URI, one of them.
type FileData struct {
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Bytes    string `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
}

// maxCallParts bounds the parts of one call or result.
const maxCallParts = 32

// ErrBadPart: a peer sent a part that cannot be taken (bad base64, over
// the size limit, a media type that does not fit its kind).
var ErrBadPart = errors.New("bad part")

// wireParts returns parts as FileParts, loading the bytes of blob
// references from rt's store as run id sees them.
func wireParts(ctx context.Context, rt *swarm.Runtime, id string, parts []model.Part) ([]FilePart, error) {
	var out []FilePart
	for i, p := range parts {
		if p.Type == model.PartText {
			continue // text goes in the input
		}
		data := p.Data
		if p.Blob != "" && len(data) == 0 {
			b, ok := storeBlobs(rt)
			if !ok {
				return nil, fmt.Errorf("part %d: blob %s, and the store keeps no blobs", i, p.Blob)
			}
			var err error
			if data, err = b.Blob(ctx, id, p.Blob); err != nil {
				return nil, fmt.Errorf("part %d: %w", i, err)
			}
		}
		fd := FileData{Name: p.Name, MimeType: p.MediaType, URI: p.URL}
		if p.URL == "" {
			fd.Bytes = base64.StdEncoding.EncodeToString(data)
		}
		out = append(out, FilePart{Kind: "file", File: fd})
	}
	return out, nil
}

func storeBlobs(rt *swarm.Runtime) (store.Blobs, bool) {
	if rt == nil {
		return nil, false
	}
	b, ok := rt.Store().(store.Blobs)
	return b, ok
}

// modelParts decodes the FileParts a peer sent: each must be a file part
// with bytes in base64 or an http(s) URI, at most store.MaxBlobBytes, and
// valid as a model part (an image's media type is image/*). Errors wrap
// ErrBadPart and name the part.
func modelParts(fps []FilePart) ([]model.Part, error) {
	if len(fps) > maxCallParts {
		return nil, fmt.Errorf("%w: %d parts, the limit is %d", ErrBadPart, len(fps), maxCallParts)
	}
	var out []model.Part
	for i, fp := range fps {
		if fp.Kind != "file" {
			return nil, fmt.Errorf("%w: part %d: kind %q, want file", ErrBadPart, i, fp.Kind)
		}
		f := fp.File
		if (f.Bytes == "") == (f.URI == "") {
			return nil, fmt.Errorf("%w: part %d: want bytes or a uri, one of them", ErrBadPart, i)
		}
		var p model.Part
		if f.URI != "" {
			p = model.Part{Type: model.PartFile, Name: f.Name, MediaType: f.MimeType, URL: f.URI}
			if strings.HasPrefix(f.MimeType, "image/") {
				p.Type, p.Name = model.PartImage, ""
			}
		} else {
			if n := base64.StdEncoding.DecodedLen(len(f.Bytes)); n > store.MaxBlobBytes+3 {
				return nil, fmt.Errorf("%w: part %d: about %d bytes, the limit is %d: %w", ErrBadPart, i, n, store.MaxBlobBytes, store.ErrTooLarge)
			}
			data, err := base64.StdEncoding.DecodeString(f.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: part %d: bytes are not base64: %w", ErrBadPart, i, err)
			}
			if len(data) > store.MaxBlobBytes {
				return nil, fmt.Errorf("%w: part %d: %d bytes, the limit is %d: %w", ErrBadPart, i, len(data), store.MaxBlobBytes, store.ErrTooLarge)
			}
			p = model.Attachment(f.Name, f.MimeType, data)
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("%w: part %d: %w", ErrBadPart, i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// sendParts puts in req the parts a call of capability name carries: for
// a shared swarm or agent, those of the calling agent's conversation
// (swarm.ConversationParts), their bytes loaded from the caller's store.
// A shared tool takes JSON only.
func (n *Node) sendParts(ctx context.Context, name string, req *CallRequest) error {
	parts := swarm.ConversationParts(ctx)
	if len(parts) == 0 {
		return nil
	}
	if o, ok := n.reg.Find(name); !ok || o.Kind == KindTool {
		return nil
	}
	n.mu.Lock()
	rt := n.rt
	n.mu.Unlock()
	fps, err := wireParts(ctx, rt, swarm.RunID(ctx), parts)
	if err != nil {
		return fmt.Errorf("the parts of a call of %s: %w", name, err)
	}
	req.Parts = fps
	return nil
}
