package server

import (
	"encoding/json"
	"net/http"

	"github.com/swarmrt/swarm/fork"
)

// ForkRequest is the body of POST /v1/runs/{id}/fork.
type ForkRequest struct {
	// At is the step key to fork at; empty re-runs from the start.
	At string `json:"at,omitempty"`
	// ID optionally names the new run.
	ID string `json:"id,omitempty"`
	// Input and Values, when set, replace the run's.
	Input  json.RawMessage `json:"input,omitempty"`
	Values map[string]any  `json:"values,omitempty"`
	// Edits replace the outcomes of recorded steps at or before At (see
	// fork.Edits).
	Edits []fork.Edit `json:"edits,omitempty"`
}

// forkRun starts a new run from a recorded step of the run in the path
// (see swarm.Runtime.Fork) and answers 201 with its status.
func (s *Server) forkRun(w http.ResponseWriter, r *http.Request) {
	var req ForkRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	st, ok := s.authorizedRun(w, r)
	if !ok {
		return
	}
	var opts []fork.Option
	if req.ID != "" {
		if err := checkClientID(req.ID); err != nil {
			s.fail(w, r, err)
			return
		}
		opts = append(opts, fork.ID(req.ID))
	}
	if len(req.Input) > 0 {
		opts = append(opts, fork.Input(req.Input))
	}
	if req.Values != nil {
		opts = append(opts, fork.Values(req.Values))
	}
	if len(req.Edits) > 0 {
		opts = append(opts, fork.Edits(req.Edits...))
	}
	id, err := s.rt.Fork(r.Context(), st.ID, req.At, opts...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	forked, err := s.rt.Status(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/runs/"+id)
	writeJSON(w, http.StatusCreated, runStatus(forked))
}
