package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// DefaultMaxUploadBytes is the default body limit of a run's start and
// of a resume, where attachments travel (in JSON as base64, or as
// multipart files).
const DefaultMaxUploadBytes = 32 << 20

// maxMultipartFiles bounds the files of one multipart body.
const maxMultipartFiles = 32

// isUpload reports whether r starts a run or resumes one (a message to a
// conversation): its body may carry parts.
func isUpload(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/swarms/"); ok {
		return strings.HasSuffix(rest, "/runs") && strings.Count(rest, "/") == 1
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/runs/")
	return ok && strings.HasSuffix(rest, "/resume") && strings.Count(rest, "/") == 1
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
	return s.decodeMultipart(w, r, &req.Parts, "input, id, values or file", func(name string, data []byte) error {
		switch name {
		case "input":
			if !json.Valid(data) {
				return badRequest("multipart field input: not JSON")
			}
			req.Input = data
		case "id":
			req.ID = string(data)
		case "values":
			if err := json.Unmarshal(data, &req.Values); err != nil {
				return badRequest("multipart field values: %v", err)
			}
		default:
			return errUnknownField
		}
		return nil
	})
}

// decodeMultipartMessage reads a resume sent as multipart/form-data:
// fields message and pause, and file fields as decodeMultipartStart
// reads them.
func (s *Server) decodeMultipartMessage(w http.ResponseWriter, r *http.Request, req *MessageRequest) bool {
	return s.decodeMultipart(w, r, &req.Parts, "message, pause or file", func(name string, data []byte) error {
		switch name {
		case "message":
			req.Message = string(data)
		case "pause":
			n, err := strconv.ParseInt(string(data), 10, 64)
			if err != nil {
				return badRequest("multipart field pause: want a sequence number, got %q", data)
			}
			req.Pause = n
		default:
			return errUnknownField
		}
		return nil
	})
}

// errUnknownField is what a multipart field reader returns for a field
// it does not know.
var errUnknownField = errors.New("unknown multipart field")

// decodeMultipart reads a multipart/form-data body: each file field named
// file becomes a part appended to parts (its kind and media type from its
// Content-Type or name), any other field goes to field, which returns
// errUnknownField for one it does not know (known names those it takes).
// It answers the error itself and reports false.
func (s *Server) decodeMultipart(w http.ResponseWriter, r *http.Request, parts *[]model.Part, known string, field func(name string, data []byte) error) bool {
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
		name := p.FormName()
		if name != "file" {
			if err := field(name, data); errors.Is(err, errUnknownField) {
				s.fail(w, r, badRequest("unknown multipart field %q (want %s)", name, known))
				return false
			} else if err != nil {
				s.fail(w, r, err)
				return false
			}
			continue
		}
		if len(*parts) == maxMultipartFiles {
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
		*parts = append(*parts, model.Attachment(p.FileName(), ct, data))
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
// run's own authorization: GET /v1/runs/{id}/blobs/{hash}?name=NAME, as
// [ServeBlob] says.
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
	ServeBlob(w, r, hash, r.URL.Query().Get("name"), data)
}

// ServeBlob writes the bytes data of the blob hash, a part named name
// (may be empty), for the API's and the dashboard's downloads of a run's
// files. The bytes decide how they are served, not the media type a part
// claims: a PNG, JPEG, GIF or WebP image (sniffed) inline, as the image it
// is; anything else as an attachment of type application/octet-stream
// under a safe file name, so that no PDF, SVG or HTML is ever shown from
// the server's origin. Every answer is nosniff, sandboxed, same-origin and
// cached as immutable (a hash's bytes never change); ranges and
// If-None-Match work.
func ServeBlob(w http.ResponseWriter, r *http.Request, hash, name string, data []byte) {
	sniffed := http.DetectContentType(data)
	mt, disposition := "application/octet-stream", "attachment"
	if inlineImages[sniffed] {
		mt, disposition = sniffed, "inline"
	}
	h := w.Header()
	h.Set("Content-Type", mt)
	h.Set("Content-Disposition", contentDisposition(disposition, downloadName(name, hash, sniffed)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", blobCSP)
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	// The bytes of a hash never change; the caller's access may, so only
	// the client keeps them.
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	h.Set("ETag", `"`+hash+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// inlineImages are the media types a page may show: the
// raster images every browser decodes without running anything. SVG is
// not among them (it is a document that can hold scripts), nor PDF,
// HTML or audio: those are downloads.
var inlineImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// blobCSP is the Content-Security-Policy of a part's bytes: opened on
// their own (a thumbnail's "full size"), they run nothing and load
// nothing, in a sandbox of their own.
const blobCSP = "default-src 'none'; img-src 'self'; sandbox"

// maxNameRunes bounds the file name a download is given.
const maxNameRunes = 100

// contentDisposition is the Content-Disposition header of a download
// named name (RFC 6266; a name beyond ASCII in its filename* form).
func contentDisposition(disposition, name string) string {
	if v := mime.FormatMediaType(disposition, map[string]string{"filename": name}); v != "" {
		return v
	}
	return disposition
}

// downloadName returns a safe file name for a part named name, whose
// bytes are of media type mt: its last path element, with only letters,
// digits, spaces and . - _ + ( ) kept (any other character becomes _),
// no leading dots, at most maxNameRunes long. Without a usable name it is
// the hash's first 16 digits with the extension of mt, if known.
func downloadName(name, hash, mt string) string {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if !utf8.ValidString(name) {
		name = ""
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), strings.ContainsRune(" .-_+()", r):
			return r
		}
		return '_'
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ".")
	if rs := []rune(name); len(rs) > maxNameRunes {
		ext := path.Ext(name)
		if len(ext) > 10 {
			ext = ""
		}
		name = string(rs[:maxNameRunes-len([]rune(ext))]) + ext
	}
	if strings.Trim(name, "_ ") != "" {
		return name
	}
	mt, _, _ = strings.Cut(mt, ";")
	return hash[:16] + extensions[mt]
}

// extensions are the file extensions of the media types a download
// without a name may have (as net/http sniffs them).
var extensions = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp", "image/bmp": ".bmp",
	"application/pdf": ".pdf", "application/zip": ".zip", "application/x-gzip": ".gz", "audio/wave": ".wav",
	"audio/mpeg": ".mp3", "application/ogg": ".ogg", "video/mp4": ".mp4", "text/plain": ".txt",
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
