package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/store"
)

// Limits of GET /v1/runs.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
)

// RunList is the body of GET /v1/runs: a page of runs, newest first, and
// the cursor of the next page ("" on the last page).
type RunList struct {
	Runs       []swarm.Status `json:"runs"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// cursor is the position after the last run of a page. It is sent to
// clients base64-encoded and is opaque to them.
//
// It names the last run of the page: the next page lists the runs created
// before that run (store.Filter.Before), so runs created meanwhile do not
// shift it, runs leaving a state filter do not make it skip any, and a
// page costs the same at any depth.
type cursor struct {
	ID     string `json:"id"`
	Filter string `json:"f"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor decodes cursor v of a listing with filters f. A cursor
// from a previous page names a run the caller may see, of the listed
// swarm; one naming any other run was made up, and would otherwise read
// as an empty last page.
func (s *Server) decodeCursor(ctx context.Context, v string, f store.Filter) (*cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	var c cursor
	if err != nil || json.Unmarshal(b, &c) != nil || c.ID == "" {
		return nil, badRequest("cursor: not a cursor from a previous page")
	}
	if c.Filter != listFilter(f) {
		return nil, badRequest("cursor: it belongs to a listing with other filters")
	}
	run, err := s.rt.Store().Get(ctx, c.ID)
	if errors.Is(err, store.ErrNotFound) || err == nil && (!auth.Allowed(ctx, run.Swarm) || f.Swarm != "" && run.Swarm != f.Swarm) {
		return nil, badRequest("cursor: not a cursor from a previous page")
	}
	if err != nil {
		return nil, fmt.Errorf("cursor: %w", err)
	}
	return &c, nil
}

// listFilter is the form of f's filters that a cursor is bound to.
func listFilter(f store.Filter) string {
	return f.Swarm + "\x00" + string(f.State)
}

const listChunk = 256

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.Filter{Swarm: q.Get("swarm"), State: store.State(q.Get("state"))}
	if f.State != "" && !f.State.Valid() {
		s.fail(w, r, badRequest("state: want running, paused, completed, failed or stopped, got %q", f.State))
		return
	}
	limit := DefaultListLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.fail(w, r, badRequest("limit: want a number from 1 to %d, got %q", MaxListLimit, v))
			return
		}
		limit = min(n, MaxListLimit)
	}
	if f.Swarm != "" {
		if err := auth.Check(r.Context(), f.Swarm); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	var c *cursor
	if v := q.Get("cursor"); v != "" {
		var err error
		if c, err = s.decodeCursor(r.Context(), v, f); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	runs, next, err := s.page(r.Context(), f, c, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := RunList{Runs: runs}
	if next != nil {
		next.Filter = listFilter(f)
		out.NextCursor = next.encode()
	}
	writeJSON(w, http.StatusOK, out)
}

// page returns up to limit runs matching f that the caller may see, after
// cursor c (nil: from the newest), and the cursor of the next page, if any.
func (s *Server) page(ctx context.Context, f store.Filter, c *cursor, limit int) ([]swarm.Status, *cursor, error) {
	after := ""
	if c != nil {
		after = c.ID
	}
	runs, next, err := ListPage(ctx, s.rt, f, after, limit)
	if err != nil || next == "" {
		return runs, nil, err
	}
	return runs, &cursor{ID: next}, nil
}

// ListPage returns up to limit runs matching f that the caller in ctx may
// see ([auth.Allowed]), newest first, starting after run after ("": at the
// newest), and the id to pass as after for the next page ("" when there is
// none). It sets f's Before, Limit and Offset. Paging is by keyset
// ([store.Filter.Before]), so a page costs the same at any depth.
func ListPage(ctx context.Context, rt *swarm.Runtime, f store.Filter, after string, limit int) (runs []swarm.Status, next string, err error) {
	out := []swarm.Status{}
	limit = max(limit, 1)
	p := auth.FromContext(ctx)
	// When every run the store returns is visible, one more than a page
	// tells whether another page follows; otherwise read in chunks.
	visible := p == nil || p.All() || (f.Swarm != "" && p.Allows(f.Swarm))
	f.Before, f.Offset = after, 0
	for {
		f.Limit = listChunk
		if visible {
			f.Limit = limit + 1
		}
		batch, err := rt.List(ctx, f)
		if err != nil {
			return nil, "", err
		}
		for _, run := range batch {
			if !auth.Allowed(ctx, run.Swarm) {
				continue
			}
			if len(out) == limit {
				return out, out[limit-1].ID, nil
			}
			out = append(out, run)
		}
		if len(batch) < f.Limit {
			return out, "", nil
		}
		f.Before = batch[len(batch)-1].ID
	}
}
