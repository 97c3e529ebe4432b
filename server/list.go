package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

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
// The store lists runs newest first by creation and pages by offset. New
// runs shift older ones to higher offsets, and runs leaving a state filter
// shift them lower, so an offset alone would repeat or skip runs. The
// cursor therefore names the last run (and its creation time); the next
// page starts right after that run wherever it now is, or, if it no longer
// matches the filter, at the first run created before it.
type cursor struct {
	Offset  int    `json:"o"`
	ID      string `json:"id"`
	Created int64  `json:"t"`
	Filter  string `json:"f"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, filter string) (*cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err != nil || json.Unmarshal(b, &c) != nil || c.ID == "" || c.Offset < 1 {
		return nil, badRequest("cursor: not a cursor from a previous page")
	}
	if c.Filter != filter {
		return nil, badRequest("cursor: it belongs to a listing with other filters")
	}
	return &c, nil
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
	filter := f.Swarm + "\x00" + string(f.State)
	var c *cursor
	if v := q.Get("cursor"); v != "" {
		var err error
		if c, err = decodeCursor(v, filter); err != nil {
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
		next.Filter = filter
		out.NextCursor = next.encode()
	}
	writeJSON(w, http.StatusOK, out)
}

// page returns up to limit runs matching f that the caller may see, after
// cursor c (nil: from the newest), and the cursor of the next page, if any.
func (s *Server) page(ctx context.Context, f store.Filter, c *cursor, limit int) ([]swarm.Status, *cursor, error) {
	list := func(off, n int) ([]swarm.Status, error) {
		g := f
		g.Offset, g.Limit = off, n
		return s.rt.List(ctx, g)
	}
	start := 0
	if c != nil {
		// The last run is at c.Offset-1 or later unless runs left the
		// filter; step back until the run at start is not older.
		start = c.Offset - 1
		for step := listChunk; start > 0; step *= 2 {
			at, err := list(start, 1)
			if err != nil {
				return nil, nil, err
			}
			if len(at) == 1 && (at[0].ID == c.ID || !at[0].CreatedAt.Before(time.Unix(0, c.Created))) {
				break
			}
			start = max(start-step, 0)
		}
	}
	var (
		out     = []swarm.Status{}
		lastPos int
		found   = c == nil
	)
	for pos := start; len(out) <= limit; {
		batch, err := list(pos, listChunk)
		if err != nil {
			return nil, nil, err
		}
		for i, run := range batch {
			if !found {
				if run.ID == c.ID {
					found = true
					continue
				}
				if !run.CreatedAt.Before(time.Unix(0, c.Created)) {
					continue // at or before the cursor: on an earlier page
				}
				found = true
			}
			if !auth.Allowed(ctx, run.Swarm) {
				continue
			}
			if len(out) == limit {
				return out, &cursor{Offset: lastPos + 1, ID: out[limit-1].ID, Created: out[limit-1].CreatedAt.UnixNano()}, nil
			}
			out = append(out, run)
			lastPos = pos + i
		}
		if len(batch) < listChunk {
			break
		}
		pos += len(batch)
	}
	return out, nil, nil
}
