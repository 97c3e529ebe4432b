package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// DefaultMaxUploadBytes is the default body limit of a run's start, where
// attachments travel (in JSON as base64, or as multipart files).
const DefaultMaxUploadBytes = 32 << 20

// maxMultipartFiles bounds the files of one multipart start.
const maxMultipartFiles = 32

// isStart reports whether r starts a run: its body may carry parts.
func isStart(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/swarms/")
	return ok && strings.HasSuffix(rest, "/runs") && strings.Count(rest, "/") == 1
}

// isMultipart reports whether r's body is multipart/form-data.
func isMultipart(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "multipart/form-data"
}

// decodeMultipartStart reads a start sent as multipart/form-data: fields
// input (JSON), id and values (JSON), and any number of file fields named
// file, each becoming a part (its kind and media type from its
// Content-Type or name). It answers the error itself and reports false.
func (s *Server) decodeMultipartStart(w http.ResponseWriter, r *http.Request, req *StartRequest) bool {
	mr, err := r.MultipartReader()
	if err != nil {
		s.fail(w, r, badRequest("multipart body: %v", err))
		return false
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return true
		}
		if err != nil {
			s.fail(w, r, readError(err))
			return false
		}
		data, err := io.ReadAll(p)
		if err != nil {
			s.fail(w, r, readError(err))
			return false
		}
		switch name := p.FormName(); name {
		case "input":
			if !json.Valid(data) {
				s.fail(w, r, badRequest("multipart field input: not JSON"))
				return false
			}
			req.Input = data
		case "id":
			req.ID = string(data)
		case "values":
			if err := json.Unmarshal(data, &req.Values); err != nil {
				s.fail(w, r, badRequest("multipart field values: %v", err))
				return false
			}
		case "file":
			if len(req.Parts) == maxMultipartFiles {
				s.fail(w, r, badRequest("more than %d files", maxMultipartFiles))
				return false
			}
			if len(data) == 0 {
				s.fail(w, r, badRequest("file %q is empty", p.FileName()))
				return false
			}
			ct := p.Header.Get("Content-Type")
			if ct == "application/octet-stream" {
				ct = "" // a client's default: find the type from the name and bytes
			}
			req.Parts = append(req.Parts, model.Attachment(p.FileName(), ct, data))
		default:
			s.fail(w, r, badRequest("unknown multipart field %q (want input, id, values or file)", name))
			return false
		}
	}
}

// readError is a body that could not be read: too large (413) or not
// well formed (400).
func readError(err error) error {
	if _, code := classify(err); code == "body_too_large" {
		return err
	}
	return badRequest("read body: %v", err)
}

// getBlob serves the bytes of a part kept as a blob of a run, behind the
// run's own authorization: GET /v1/runs/{id}/blobs/{hash}. Images, audio
// and PDFs are served inline (the dashboard shows them); anything else as
// an attachment, and nothing is ever sniffed into HTML.
func (s *Server) getBlob(w http.ResponseWriter, r *http.Request) {
	st, ok := s.authorizedRun(w, r)
	if !ok {
		return
	}
	b, ok := s.rt.Store().(store.Blobs)
	if !ok {
		s.fail(w, r, fmt.Errorf("this store keeps no blobs: %w", store.ErrNoBlob))
		return
	}
	hash := r.PathValue("hash")
	if !model.IsBlobHash(hash) {
		s.fail(w, r, badRequest("blob %q: want a lowercase hex SHA-256", hash))
		return
	}
	data, err := b.Blob(r.Context(), st.ID, hash)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	mt := http.DetectContentType(data)
	disposition := "attachment"
	if strings.HasPrefix(mt, "image/") || strings.HasPrefix(mt, "audio/") || mt == "application/pdf" {
		disposition = "inline"
	} else {
		mt = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", mt)
	h.Set("Content-Disposition", disposition+`; filename="`+hash[:16]+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	h.Set("ETag", `"`+hash+`"`)
	if r.Header.Get("If-None-Match") == `"`+hash+`"` {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// startParts is the start option of req's parts, if any.
func startParts(req *StartRequest) []swarm.StartOption {
	if len(req.Parts) == 0 {
		return nil
	}
	return []swarm.StartOption{swarm.WithParts(req.Parts...)}
}

// sameParts reports whether the parts a run was started with (as its start
// record holds them, large ones by reference) are those of a repeated
// start: the same kinds, names, media types, URLs and bytes (by hash).
func sameParts(stored, given []model.Part) bool {
	if len(stored) != len(given) {
		return false
	}
	for i := range stored {
		s, g := &stored[i], &given[i]
		if s.Type != g.Type || s.Name != g.Name || s.MediaType != g.MediaType || s.URL != g.URL || s.Text != g.Text {
			return false
		}
		if s.Blob != "" {
			if s.Blob != store.BlobHash(g.Data) {
				return false
			}
		} else if !bytes.Equal(s.Data, g.Data) {
			return false
		}
	}
	return true
}

// PartRef is a part as the HTTP API shows it: a small part with its bytes
// (data), a large one by reference (blob and size) with DownloadURL, the
// path of GET /v1/runs/{id}/blobs/{hash}, behind the run's own tokens.
type PartRef struct {
	model.Part
	DownloadURL string `json:"download_url,omitempty"`
}

// partRefs returns run id's parts with their download URLs.
func partRefs(id string, parts []model.Part) []PartRef {
	if len(parts) == 0 {
		return nil
	}
	out := make([]PartRef, len(parts))
	for i, p := range parts {
		out[i] = PartRef{Part: p}
		if p.Blob != "" {
			out[i].DownloadURL = blobPath(id, p.Blob)
		}
	}
	return out
}

// blobPath is the path the bytes of blob hash of run id download from.
func blobPath(id, hash string) string {
	return "/v1/runs/" + url.PathEscape(id) + "/blobs/" + hash
}
