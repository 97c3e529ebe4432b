package dashboard

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// inlineImages are the media types the dashboard shows in the page: the
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

// blob serves the bytes of a part of run id kept in the store's blob
// table (a large image, file or audio of its input or of a tool's result):
// GET /ui/runs/{id}/blobs/{hash}?name=NAME, for the session allowed the
// run, and only a blob the run refers to (another run's is unknown here,
// 404). The bytes decide how they are served, not the media type the
// part claims: a PNG, JPEG, GIF or WebP image (sniffed) inline, as the
// image it is; anything else as an attachment of type
// application/octet-stream, so that no PDF, SVG or HTML is ever shown
// from the dashboard's origin. NAME, the part's file name, is the
// download's name once made safe.
func (d *Dashboard) blob(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := d.authorizedRun(ctx, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	hash := r.PathValue("hash")
	if !model.IsBlobHash(hash) {
		d.error(w, r, http.StatusNotFound, "There is no file "+hash+" in run "+st.ID+": a file is named by the SHA-256 of its bytes, in lowercase hex.")
		return
	}
	b, ok := d.rt.Store().(store.Blobs)
	if !ok {
		d.fail(w, r, fmt.Errorf("this store keeps no files: %w", store.ErrNoBlob))
		return
	}
	data, err := b.Blob(ctx, st.ID, hash)
	if err != nil {
		d.fail(w, r, fmt.Errorf("file %s of run %s: %w", hash, st.ID, err))
		return
	}
	sniffed := http.DetectContentType(data)
	mt, disposition := "application/octet-stream", "attachment"
	if inlineImages[sniffed] {
		mt, disposition = sniffed, "inline"
	}
	h := w.Header()
	h.Set("Content-Type", mt)
	h.Set("Content-Disposition", contentDisposition(disposition, downloadName(r.URL.Query().Get("name"), hash, sniffed)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", blobCSP)
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	// The bytes of a hash never change; the session may, so only the
	// browser keeps them.
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	h.Set("ETag", `"`+hash+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

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
