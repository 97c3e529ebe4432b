package team_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recorder is a model that keeps the requests it answers.
type recorder struct {
	m    *scripted.Model
	mu   sync.Mutex
	reqs []model.Request
}

func (r *recorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, *req)
	r.mu.Unlock()
	return r.m.Generate(ctx, req)
}

// last is agent's newest request.
func (r *recorder) last(agent string) model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.reqs) - 1; i >= 0; i-- {
		if r.reqs[i].Agent == agent {
			return r.reqs[i]
		}
	}
	return model.Request{}
}
