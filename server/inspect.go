package server

import (
	"errors"
	"net/http"

	"github.com/swarmrt/swarm/store"
)

// modelRequest answers GET /v1/runs/{id}/requests/{key...}: the request
// the model call journaled under key received (see swarm.Runtime.Request).
func (s *Server) modelRequest(w http.ResponseWriter, r *http.Request) {
	st, ok := s.authorizedRun(w, r)
	if !ok {
		return
	}
	req, err := s.rt.Request(r.Context(), st.ID, r.PathValue("key"))
	if errors.Is(err, store.ErrNotFound) {
		// The run exists: the step does not.
		writeError(w, http.StatusNotFound, "not_found", err.Error())
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}
