package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/model"
)

// StartRequest is the body of POST /v1/swarms/{swarm}/runs.
type StartRequest struct {
	// Input is the run's input: a JSON string for swarms that take text,
	// otherwise a value matching the swarm's input schema.
	Input json.RawMessage `json:"input"`
	// ID optionally names the run. Starting again with the same id, swarm,
	// input and values returns the existing run (200 instead of 201), which
	// makes retries safe; the same id with anything else is a conflict.
	ID string `json:"id,omitempty"`
	// Values are the data the swarm's instruction templates see.
	Values map[string]any `json:"values,omitempty"`
	// Parts are images, files and audio attached to the input: each
	// {"type": "image"|"file"|"audio", "media_type", "data" (base64)} or
	// {"type", "url"}, files with a "name". A multipart/form-data start
	// sends them as file fields instead.
	Parts []model.Part `json:"parts,omitempty"`
}

// RunStatus is the body of the run endpoints: the run's status, and for a
// failed run also an error object (code run_failed, the reason), as
// earlier versions answered.
type RunStatus struct {
	swarm.Status
	// Parts are a completed run's result parts, each with the URL its
	// bytes download from when it is kept as a blob.
	Parts []PartRef `json:"parts,omitempty"`
	Error *Error    `json:"error,omitempty"`
	// Limits is where the run's tree stands against its call limits
	// (GET /v1/runs/{id} only).
	Limits *CallLimits `json:"limits,omitempty"`
}

// MessageRequest is the body of POST /v1/runs/{id}/resume (Message, Pause,
// Parts) and POST /v1/runs/{id}/stop (Reason).
type MessageRequest struct {
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Pause names the pause a resume answers (the paused status's
	// "pause"); if the run no longer waits at it, the resume gets 409
	// pause_not_current and nothing is applied. Without it, the current
	// pause is answered.
	Pause int64 `json:"pause,omitempty"`
	// Parts are images, files and audio sent with a resume's message (a
	// user's message to a conversation), as a start's parts are: each
	// {"type", "media_type", "data" (base64)} or {"type", "url"}, files
	// with a "name". A multipart/form-data resume sends them as file
	// fields instead.
	Parts []model.Part `json:"parts,omitempty"`
}

// maxRunID is the longest run id a client may choose.
const maxRunID = 200

func checkClientID(id string) error {
	if len(id) > maxRunID {
		return badRequest("id is longer than %d bytes", maxRunID)
	}
	for _, r := range id {
		if r < 0x21 || r == 0x7f {
			return badRequest("id %q contains spaces or control characters", id)
		}
	}
	return nil
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	swarmID := r.PathValue("swarm")
	if err := auth.Check(ctx, swarmID); err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.registered(swarmID) {
		s.fail(w, r, fmt.Errorf("%w %q", swarm.ErrUnknownSwarm, swarmID))
		return
	}
	var req StartRequest
	if isMultipart(r) {
		if !s.decodeMultipartStart(w, r, &req) {
			return
		}
	} else if !decodeBody(w, r, &req, true) {
		return
	}
	if len(req.Input) == 0 {
		req.Input = json.RawMessage("null")
	}
	if req.ID != "" {
		if err := checkClientID(req.ID); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	// The store's insert decides who created the run: a check before
	// starting would let several concurrent starts answer 201.
	created := false
	opts := []swarm.StartOption{swarm.WithCreated(&created)}
	if req.ID != "" {
		opts = append(opts, swarm.WithID(req.ID))
	}
	if req.Values != nil {
		opts = append(opts, swarm.WithValues(req.Values))
	}
	opts = append(opts, startParts(&req)...)
	id, err := s.rt.Start(ctx, swarmID, req.Input, opts...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if req.ID != "" {
		// Start returns an existing run with this id and swarm without
		// comparing inputs: a repeat must be identical to be the same run.
		if err := s.sameStart(ctx, id, req); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	st, err := s.rt.Status(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/runs/"+id)
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	writeJSON(w, status, runStatus(st))
}

// sameStart reports a conflict unless run id was started with req's input
// and values.
func (s *Server) sameStart(ctx context.Context, id string, req StartRequest) error {
	recs, err := s.rt.Store().Read(ctx, id, 0, 1)
	if err != nil {
		return err
	}
	if len(recs) == 0 || recs[0].Type != string(swarm.EventStarted) {
		return fmt.Errorf("run %s has no start record", id)
	}
	var ev swarm.Event
	if err := json.Unmarshal(recs[0].Data, &ev); err != nil {
		return fmt.Errorf("run %s: decode start record: %w", id, err)
	}
	if !equalJSON(ev.Input, req.Input) || !equalJSON(mustJSON(ev.Values), mustJSON(req.Values)) || !sameParts(ev.Parts, req.Parts) {
		return fmt.Errorf("%w: run %s exists with a different input, values or parts", errConflict, id)
	}
	return nil
}

func mustJSON(v map[string]any) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// equalJSON compares two JSON texts by value (key order and spacing aside).
func equalJSON(a, b json.RawMessage) bool {
	if len(a) == 0 {
		a = json.RawMessage("null")
	}
	if len(b) == 0 {
		b = json.RawMessage("null")
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func (s *Server) registered(id string) bool {
	for _, d := range s.rt.Swarms() {
		if d.ID() == id {
			return true
		}
	}
	return false
}

// runStatus wraps a status for the wire.
func runStatus(st swarm.Status) RunStatus {
	rs := RunStatus{Status: st, Parts: partRefs(st.ID, st.Parts)}
	if st.State == swarm.StateFailed {
		rs.Error = &Error{Code: "run_failed", Message: st.Reason}
	}
	return rs
}

// httpStatus maps a run's state to the status of GET /v1/runs/{id}:
// running 202 (not finished yet), every other state 200. A failed run is
// a status read successfully, not a bad request: its state and reason are
// in the body.
func httpStatus(st swarm.State) int {
	if st == swarm.StateRunning {
		return http.StatusAccepted
	}
	return http.StatusOK
}

// authorizedRun returns the status of the run named in the path after
// checking that the caller may use its swarm; on failure it has answered.
func (s *Server) authorizedRun(w http.ResponseWriter, r *http.Request) (swarm.Status, bool) {
	st, err := s.rt.Status(r.Context(), r.PathValue("id"))
	if err == nil {
		err = auth.Check(r.Context(), st.Swarm)
	}
	if err != nil {
		s.fail(w, r, err)
		return swarm.Status{}, false
	}
	return st, true
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			s.fail(w, r, badRequest("wait: want a duration such as 30s, got %q", v))
			return
		}
		wait = min(d, s.opts.MaxWait)
	}
	st, ok := s.authorizedRun(w, r)
	if !ok {
		return
	}
	if wait > 0 && st.State == swarm.StateRunning {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		stop := context.AfterFunc(s.ctx, cancel)
		ws, err := s.rt.Wait(ctx, st.ID)
		stop()
		cancel()
		switch {
		case err == nil:
			st = ws
		case r.Context().Err() != nil:
			return // the client left
		default:
			// Timed out or shutting down: answer with the latest status.
			if now, err := s.rt.Status(r.Context(), st.ID); err == nil {
				st = now
			}
		}
	}
	rs := runStatus(st)
	if l, err := Limits(r.Context(), s.rt, st.ID); err == nil {
		rs.Limits = l
	} else {
		s.log.Warn("reading a run tree's call limits", "run", st.ID, "err", err)
	}
	writeJSON(w, httpStatus(st.State), rs)
}

func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request) {
	s.command(w, r, func(ctx context.Context, id string, req MessageRequest) error {
		if req.Pause < 0 {
			return badRequest("pause: want the sequence number of a pause, got %d", req.Pause)
		}
		var opts []swarm.ResumeOption
		if req.Pause != 0 {
			opts = append(opts, swarm.AtPause(req.Pause))
		}
		if len(req.Parts) > 0 {
			opts = append(opts, swarm.ResumeParts(req.Parts...))
		}
		return s.rt.Resume(ctx, id, req.Message, opts...)
	})
}

func (s *Server) stopRun(w http.ResponseWriter, r *http.Request) {
	s.command(w, r, func(ctx context.Context, id string, req MessageRequest) error {
		if len(req.Parts) > 0 {
			return badRequest("parts: a stop carries none")
		}
		return s.rt.Stop(ctx, id, req.Reason)
	})
}

// deleteRun deletes a finished run with the runs below it and all kept
// for them, and answers 204. A run that is not finished (or has such a
// run below it) and a child run on its own get 409; an unknown run 404.
func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) {
	st, ok := s.authorizedRun(w, r)
	if !ok {
		return
	}
	if _, err := s.rt.Delete(r.Context(), st.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// command runs a resume or stop on the run named in the path and answers
// 202 with the run's status. The runtime refuses invalid transitions
// (resuming a run that is not paused, stopping a finished run) with
// ErrInvalidState, which becomes 409.
func (s *Server) command(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, id string, req MessageRequest) error) {
	var req MessageRequest
	if isMultipart(r) && isUpload(r) {
		if !s.decodeMultipartMessage(w, r, &req) {
			return
		}
	} else if !decodeBody(w, r, &req, false) {
		return
	}
	st, ok := s.authorizedRun(w, r)
	if !ok {
		return
	}
	if err := do(r.Context(), st.ID, req); err != nil {
		s.fail(w, r, err)
		return
	}
	if st, err := s.rt.Status(r.Context(), st.ID); err != nil {
		s.fail(w, r, err)
	} else {
		writeJSON(w, http.StatusAccepted, runStatus(st))
	}
}
