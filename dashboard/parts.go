package dashboard

import (
	"fmt"
	"net/http"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/server"
	"github.com/swarmrt/swarm/store"
)

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
	server.ServeBlob(w, r, hash, r.URL.Query().Get("name"), data)
}
