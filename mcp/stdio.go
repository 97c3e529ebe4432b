package mcp

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
)

// Serve serves [NewServer]'s server over t (stdio, for one) until the
// client disconnects or ctx ends, with the Tasks extension as
// [NewHTTPHandler] serves it: a stateless (2026-07-28) client that
// declares it gets long runs as tasks, and its tasks/get, tasks/update
// and tasks/cancel are answered here. Over stdio there is no principal:
// every task may be read, answered and cancelled.
func Serve(ctx context.Context, rt *swarm.Runtime, opts Options, t sdk.Transport) error {
	srv, s, err := newServer(rt, opts, true)
	if err != nil {
		return err
	}
	return srv.Run(ctx, &taskTransport{Transport: t, s: s})
}

// taskTransport answers the Tasks extension's requests on its connection,
// which the SDK would refuse as unknown methods.
type taskTransport struct {
	sdk.Transport
	s *server
}

func (t *taskTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskConn{Connection: c, s: t.s}, nil
}

type taskConn struct {
	sdk.Connection
	s  *server
	wg sync.WaitGroup
}

// Read passes every message on but the extension's requests, which it
// answers (each on a goroutine of its own, as the SDK handles calls).
func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			return m, err
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() || !isTaskMethod(req.Method) {
			return m, nil
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			_ = c.Connection.Write(ctx, c.answer(ctx, req))
		}()
	}
}

// Close waits for the answers in flight.
func (c *taskConn) Close() error {
	err := c.Connection.Close()
	c.wg.Wait()
	return err
}

func (c *taskConn) answer(ctx context.Context, req *jsonrpc.Request) *jsonrpc.Response {
	fail := func(e *jsonrpc.Error) *jsonrpc.Response { return &jsonrpc.Response{ID: req.ID, Error: e} }
	var p taskParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: req.Method + ": invalid params: " + err.Error()})
	}
	if e := taskMetaError(req.Method, p.Meta); e != nil {
		return fail(e)
	}
	res, terr := c.s.handleTask(ctx, req.Method, p)
	if terr != nil {
		return fail(terr.err)
	}
	b, err := json.Marshal(withServerInfo(res, c.s.impl))
	if err != nil {
		return fail(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
	}
	return &jsonrpc.Response{ID: req.ID, Result: b}
}
