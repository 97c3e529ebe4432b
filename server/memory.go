package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/store"
)

// The memory routes: agents' memory banks (package memory), for a person
// to see and delete what agents remember. Banks are not a swarm's, so
// they take a token allowed every swarm by "*" (a static token without
// swarms, or the scope swarm:*): a token that lists swarms by name is
// refused even when it names every one, since a swarm added later would
// share the banks it cannot use.

// BankList is the body of GET /v1/memory.
type BankList struct {
	Banks []store.BankInfo `json:"banks"`
}

// BankEntries is the body of GET /v1/memory/{bank}.
type BankEntries struct {
	Bank    store.BankInfo      `json:"bank"`
	Entries []store.MemoryEntry `json:"entries"`
}

// maxMemoryPage bounds the entries of one GET /v1/memory/{bank}.
const maxMemoryPage = 1000

// memories checks the caller and the bank of the path, and returns the
// store's banks.
func (s *Server) memories(w http.ResponseWriter, r *http.Request) (store.Memories, bool) {
	if p := auth.FromContext(r.Context()); p != nil && !p.All() {
		writeError(w, http.StatusForbidden, "forbidden", "memory banks need a token allowed every swarm by \"*\" (swarms: [\"*\"] or the scope swarm:*); a token listing swarms by name is refused, even one naming every swarm")
		return nil, false
	}
	ms, ok := s.rt.Store().(store.Memories)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("store %T keeps no memory banks", s.rt.Store()))
		return nil, false
	}
	if b := r.PathValue("bank"); b != "" {
		if err := store.CheckBank(b); err != nil {
			s.fail(w, r, badRequest("%v", err))
			return nil, false
		}
	}
	return ms, true
}

func (s *Server) listBanks(w http.ResponseWriter, r *http.Request) {
	ms, ok := s.memories(w, r)
	if !ok {
		return
	}
	banks, err := ms.Banks(r.Context(), r.URL.Query().Get("prefix"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, BankList{Banks: banks})
}

func (s *Server) listMemories(w http.ResponseWriter, r *http.Request) {
	ms, ok := s.memories(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxMemoryPage {
			s.fail(w, r, badRequest("limit: want 1 to %d, got %q", maxMemoryPage, v))
			return
		}
		limit = n
	}
	bank := r.PathValue("bank")
	info, err := ms.Bank(r.Context(), bank)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	es, err := ms.ListMemories(r.Context(), bank, store.MemoryFilter{Prefix: q.Get("prefix"), After: q.Get("after"), Limit: limit})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, BankEntries{Bank: info, Entries: es})
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request) {
	ms, ok := s.memories(w, r)
	if !ok {
		return
	}
	e, err := ms.GetMemory(r.Context(), r.PathValue("bank"), r.PathValue("key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) deleteMemory(w http.ResponseWriter, r *http.Request) {
	ms, ok := s.memories(w, r)
	if !ok {
		return
	}
	if err := ms.DeleteMemory(r.Context(), r.PathValue("bank"), r.PathValue("key")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deleteBank(w http.ResponseWriter, r *http.Request) {
	ms, ok := s.memories(w, r)
	if !ok {
		return
	}
	n, err := ms.DeleteBank(r.Context(), r.PathValue("bank"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"deleted": n})
}
