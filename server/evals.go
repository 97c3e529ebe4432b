package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/eval"
)

// The eval routes: eval runs are runs of the eval runner swarm
// (eval.SwarmID) whose result is the report; these routes list them with
// their set, configuration and counts, read one with its report (or, while
// it runs, the cases finished so far), and compare two. A token sees them
// when it may use the eval swarm and the swarm under test.

// EvalList is the body of GET /v1/evals: eval runs, newest first.
type EvalList struct {
	Evals []eval.RunInfo `json:"evals"`
}

// EvalRun is the body of GET /v1/evals/{id}: the eval run, its report once
// it has finished, and while it runs the cases finished so far.
type EvalRun struct {
	Eval     eval.RunInfo    `json:"eval"`
	Report   *eval.Report    `json:"report,omitempty"`
	Progress []eval.Progress `json:"progress,omitempty"`
}

func (s *Server) listEvals(w http.ResponseWriter, r *http.Request) {
	limit := DefaultListLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListLimit {
			s.fail(w, r, badRequest("limit: want 1 to %d, got %q", MaxListLimit, v))
			return
		}
		limit = n
	}
	runs, err := Evals(r.Context(), s.rt, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := EvalList{Evals: runs}
	writeJSON(w, http.StatusOK, out)
}

// Evals lists the eval runs of rt that the caller of ctx may see, newest
// first, at most limit (0: all): the caller needs the eval swarm, and an
// eval run of a swarm it may not use is left out. The dashboard lists
// them with it.
func Evals(ctx context.Context, rt *swarm.Runtime, limit int) ([]eval.RunInfo, error) {
	if err := auth.Check(ctx, eval.SwarmID); err != nil {
		return nil, err
	}
	runs, err := eval.Runs(ctx, rt, limit)
	if err != nil {
		return nil, err
	}
	out := []eval.RunInfo{}
	for _, e := range runs {
		if e.Swarm == "" || auth.Allowed(ctx, e.Swarm) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Eval reads eval run id of rt for the caller of ctx (see eval.RunOf):
// an error that answers 404 (StatusOf) when it is no eval run, 403 when
// the caller may not use the eval swarm or the swarm under test.
func Eval(ctx context.Context, rt *swarm.Runtime, id string) (eval.RunInfo, *eval.Report, error) {
	if err := auth.Check(ctx, eval.SwarmID); err != nil {
		return eval.RunInfo{}, nil, err
	}
	info, rep, err := eval.RunOf(ctx, rt, id)
	if errors.Is(err, eval.ErrNotEval) {
		return info, nil, fmt.Errorf("%w: %w", errNotEvalRun, err)
	}
	if err == nil && info.Swarm != "" {
		err = auth.Check(ctx, info.Swarm)
	}
	return info, rep, err
}

// errNotEvalRun answers 404: the run exists but is no eval run.
var errNotEvalRun = errors.New("no eval run")

func (s *Server) getEval(w http.ResponseWriter, r *http.Request) {
	info, rep, err := Eval(r.Context(), s.rt, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := EvalRun{Eval: info, Report: rep}
	if rep == nil {
		if out.Progress, err = eval.FinishedCases(r.Context(), s.rt, info.ID); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) compareEvals(w http.ResponseWriter, r *http.Request) {
	var reps [2]*eval.Report
	for i, id := range []string{r.PathValue("id"), r.PathValue("other")} {
		info, rep, err := Eval(r.Context(), s.rt, id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if rep == nil {
			s.fail(w, r, fmt.Errorf("%w: eval run %s is %s: it has no report to compare yet", errConflict, id, info.State))
			return
		}
		reps[i] = rep
	}
	writeJSON(w, http.StatusOK, eval.Compare(reps[0], reps[1]))
}
