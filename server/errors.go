package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/internal/jsonx"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/team"
)

// Error is the body of every error response: {"error": {...}}.
type Error struct {
	// Code is a stable, machine-readable name: bad_request,
	// invalid_input, unauthenticated, forbidden, host_not_allowed,
	// origin_not_allowed, not_found,
	// unknown_swarm, method_not_allowed, conflict, invalid_state,
	// body_too_large, unsupported_media_type, unavailable, internal.
	Code string `json:"code"`
	// Message explains the error to a person.
	Message string `json:"message"`
}

type errorBody struct {
	Error Error `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := jsonx.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error{Code: "internal", Message: "encode response: " + err.Error()}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error{Code: code, Message: msg}})
}

// fail answers with the status and code that err calls for: the runtime's
// and store's sentinel errors become 4xx; anything else is logged and
// becomes 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code := classify(err)
	if status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	msg := err.Error()
	if fe := (*auth.ForbiddenError)(nil); errors.As(err, &fe) {
		// RFC 6750: name the scope the token lacks, so that an OAuth
		// client can ask for it.
		w.Header().Set("WWW-Authenticate", auth.FromContext(r.Context()).ScopeChallenge(r.URL.Path, fe.Swarm))
	}
	switch {
	case status == http.StatusInternalServerError:
		msg = "internal server error"
	case errors.Is(err, store.ErrNoBlob) && r.PathValue("hash") != "":
		msg = fmt.Sprintf("run %q has no blob %s", r.PathValue("id"), r.PathValue("hash"))
	case code == "not_found" && r.PathValue("id") != "":
		msg = fmt.Sprintf("no run %q", r.PathValue("id"))
	}
	writeError(w, status, code, msg)
}

// StatusOf returns the HTTP status the API answers err with: 4xx for a
// client's mistake (unknown run, forbidden swarm, invalid state or input),
// 503 when the runtime or store is unavailable, 500 otherwise. Other front
// ends (the dashboard) use it to answer as the API does.
func StatusOf(err error) int {
	status, _ := classify(err)
	return status
}

func classify(err error) (int, string) {
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb):
		return http.StatusRequestEntityTooLarge, "body_too_large"
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest, "bad_request"
	case errors.Is(err, swarm.ErrInvalidInput):
		return http.StatusBadRequest, "invalid_input"
	case errors.Is(err, auth.ErrUnauthenticated):
		return http.StatusUnauthorized, "unauthenticated"
	case errors.Is(err, auth.ErrForbidden):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, team.ErrNoMember):
		return http.StatusNotFound, "unknown_member"
	case errors.Is(err, team.ErrNoRequest):
		return http.StatusNotFound, "unknown_request"
	case errors.Is(err, team.ErrNotTeam):
		return http.StatusNotFound, "not_a_team"
	case errors.Is(err, errNotEvalRun):
		return http.StatusNotFound, "not_an_eval"
	case errors.Is(err, store.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, store.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrNoBlob):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, swarm.ErrUnknownSwarm):
		return http.StatusNotFound, "unknown_swarm"
	case errors.Is(err, store.ErrPauseNotCurrent):
		return http.StatusConflict, "pause_not_current"
	case errors.Is(err, store.ErrInvalidState):
		return http.StatusConflict, "invalid_state"
	case errors.Is(err, store.ErrExists), errors.Is(err, errConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, swarm.ErrClosed), errors.Is(err, errShuttingDown),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The server is stopping, or the client went away.
		return http.StatusServiceUnavailable, "unavailable"
	}
	return http.StatusInternalServerError, "internal"
}

var (
	errBadRequest   = errors.New("bad request")
	errConflict     = errors.New("conflict")
	errShuttingDown = errors.New("server shutting down")
)

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}

// decodeBody decodes a JSON request body into v. An empty body leaves v
// as it is unless required. A body with a content type other than JSON
// gets 415, malformed JSON 400, an oversized body 413.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, required bool) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", fmt.Sprintf("content type %q: send application/json", ct))
			return false
		}
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		status, code := classify(err)
		if status != http.StatusRequestEntityTooLarge {
			status, code = http.StatusBadRequest, "bad_request"
		}
		writeError(w, status, code, "read body: "+err.Error())
		return false
	}
	if len(b) == 0 {
		if required {
			writeError(w, http.StatusBadRequest, "bad_request", "empty body: send a JSON object")
			return false
		}
		return true
	}
	if r.Header.Get("Content-Type") == "" {
		writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "missing content type: send application/json")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "malformed JSON body: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "bad_request", "malformed JSON body: trailing data after the object")
		return false
	}
	return true
}
