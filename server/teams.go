package server

import (
	"net/http"

	"github.com/swarmrt/swarm/team"
)

// The team routes: a team is addressed by its run id (the lead's run);
// a token that may use the team's swarm may use them.

// Roster is the body of GET /v1/teams/{id}.
type Roster struct {
	ID      string              `json:"id"`
	Members []team.MemberStatus `json:"members"`
}

// MailRequest is the body of POST /v1/teams/{id}/mail: a message from the
// user to one member, or to every member when To is "*".
type MailRequest struct {
	// ID optionally names the mail, as StartRequest.ID names a run:
	// posting again with the same id delivers nothing twice (a retry is
	// safe), and the same id with other content is a conflict.
	ID      string `json:"id,omitempty"`
	To      string `json:"to"`
	Content string `json:"content"`
}

// TaskRequest is the body of POST /v1/teams/{id}/tasks.
type TaskRequest struct {
	Subject     string  `json:"subject"`
	Description string  `json:"description,omitempty"`
	BlockedBy   []int64 `json:"blocked_by,omitempty"`
}

// team resolves the team run of the path, checking the caller's token.
func (s *Server) team(w http.ResponseWriter, r *http.Request) (*team.TeamRun, bool) {
	st, ok := s.authorizedRun(w, r)
	if !ok {
		return nil, false
	}
	t, err := team.Open(r.Context(), s.rt, st.ID)
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	return t, true
}

func (s *Server) teamRoster(w http.ResponseWriter, r *http.Request) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	ms, err := t.Roster(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, Roster{ID: t.ID(), Members: ms})
}

func (s *Server) teamInbox(w http.ResponseWriter, r *http.Request) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	member := r.URL.Query().Get("member")
	if member == "" {
		member = t.Lead()
	}
	mails, err := t.Inbox(r.Context(), member)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"member": member, "mails": nonNil(mails)})
}

func (s *Server) teamSend(w http.ResponseWriter, r *http.Request) {
	var req MailRequest
	if !decodeBody(w, r, &req, true) {
		return
	}
	if req.To == "" || req.Content == "" {
		s.fail(w, r, badRequest("to and content are required"))
		return
	}
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	var opts []team.MailOption
	if req.ID != "" {
		opts = append(opts, team.WithMailID(req.ID))
	}
	if req.To == "*" {
		to, err := t.Broadcast(r.Context(), req.Content, opts...)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"to": to})
		return
	}
	m, err := t.Send(r.Context(), req.To, req.Content, opts...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, m)
}

func (s *Server) teamTasks(w http.ResponseWriter, r *http.Request) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	tasks, err := t.Tasks(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": nonNil(tasks)})
}

func (s *Server) teamAddTask(w http.ResponseWriter, r *http.Request) {
	var req TaskRequest
	if !decodeBody(w, r, &req, true) {
		return
	}
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	task, err := t.AddTask(r.Context(), req.Subject, req.Description, req.BlockedBy...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, task)
}

func (s *Server) teamRequests(w http.ResponseWriter, r *http.Request) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	reqs, err := t.Requests(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": nonNil(reqs)})
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
