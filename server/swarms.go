package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/registry"
)

// SwarmInfo describes a registered swarm in GET /v1/swarms.
type SwarmInfo struct {
	ID           string          `json:"id"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	ResultSchema json.RawMessage `json:"result_schema,omitempty"`
	Tags         []string        `json:"tags,omitempty"`
}

// SwarmList is the body of GET /v1/swarms.
type SwarmList struct {
	Swarms []SwarmInfo `json:"swarms"`
}

func swarmInfo(d swarm.Definition) SwarmInfo {
	si := SwarmInfo{ID: d.ID(), Description: d.Description(), InputSchema: d.InputSchema(), ResultSchema: d.ResultSchema()}
	if t, ok := d.(interface{ Tags() []string }); ok {
		si.Tags = slices.Clone(t.Tags())
	}
	return si
}

// listSwarms lists the swarms the caller may use, sorted by id.
func (s *Server) listSwarms(w http.ResponseWriter, r *http.Request) {
	out := SwarmList{Swarms: []SwarmInfo{}}
	for _, d := range s.rt.Swarms() {
		if auth.Allowed(r.Context(), d.ID()) {
			out.Swarms = append(out.Swarms, swarmInfo(d))
		}
	}
	slices.SortFunc(out.Swarms, func(a, b SwarmInfo) int { return strings.Compare(a.ID, b.ID) })
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getSwarm(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("swarm")
	if err := auth.Check(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	for _, d := range s.rt.Swarms() {
		if d.ID() == id {
			writeJSON(w, http.StatusOK, swarmInfo(d))
			return
		}
	}
	s.fail(w, r, fmt.Errorf("%w %q", swarm.ErrUnknownSwarm, id))
}

// RegistryHits is the body of GET /v1/registry/search.
type RegistryHits struct {
	Hits []registry.Hit `json:"hits"`
}

// searchRegistry ranks the registered swarms and agents the caller may use
// against ?q=, filtered by ?capability=, ?tag= (both repeatable), ?kind=
// and capped by ?limit= (default 10, at most 100).
func (s *Server) searchRegistry(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	opts := registry.SearchOptions{Capabilities: q["capability"], Tags: q["tag"], Kind: registry.Kind(q.Get("kind")), Limit: 10,
		Allow: func(id string) bool {
			e, ok := s.rt.Registry().Get(id)
			return ok && (e.Kind == registry.KindAgent || auth.Allowed(r.Context(), id))
		}}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			s.fail(w, r, badRequest("limit must be a positive integer"))
			return
		}
		opts.Limit = min(n, 100)
	}
	hits, err := s.rt.Registry().Search(r.Context(), q.Get("q"), opts)
	if err != nil {
		s.fail(w, r, badRequest("%s", err.Error()))
		return
	}
	if hits == nil {
		hits = []registry.Hit{}
	}
	writeJSON(w, http.StatusOK, RegistryHits{Hits: hits})
}
