package httpclient

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Two waves of concurrent calls to one server, more than net/http's default
// pool keeps, reuse the first wave's connections.
func TestWavesReuseConnections(t *testing.T) {
	const calls = 200
	var conns atomic.Int64
	arrived := make(chan struct{}, calls)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: Transport()}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for wave := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, calls)
		for range calls {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
				}
			})
		}
		// Every call of the wave is in flight at once, then all answer.
		for range calls {
			select {
			case <-arrived:
			case <-ctx.Done():
				t.Fatalf("wave %d: calls did not arrive", wave)
			}
		}
		for range calls {
			release <- struct{}{}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	// The second wave may race a few connections on their way back to
	// the pool; a pool that drops connections opens most of them again.
	if n := conns.Load(); n > calls+calls/4 {
		t.Fatalf("%d calls in two waves of %d opened %d connections, want about %d", 2*calls, calls, n, calls)
	}
}
