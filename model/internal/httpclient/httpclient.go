// Package httpclient holds the HTTP client the model providers share.
package httpclient

import (
	"net/http"
	"sync"
	"time"
)

var (
	once   sync.Once
	shared *http.Client
)

// MaxIdlePerHost is how many idle connections to one model server the
// shared client keeps. Calls to a model come in waves (every run's next
// call starts when the previous answer arrives), so a pool smaller than the
// number of calls in flight closes connections that the next wave has to
// open again: with net/http's defaults (100 idle connections in all), 10,000
// concurrent runs opened two to three connections per run, each a TLS
// handshake against a real provider. Idle connections are closed after
// IdleConnTimeout, so a burst does not hold them for long.
const MaxIdlePerHost = 16384

// Default returns one HTTP client shared by every provider built without a
// client of its own, so that they share a connection pool sized for many
// concurrent calls (see MaxIdlePerHost). It has no timeout: each call's
// context bounds it.
func Default() *http.Client {
	once.Do(func() { shared = &http.Client{Transport: Transport()} })
	return shared
}

// Transport returns a new transport configured as the shared client's.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no limit across hosts; MaxIdleConnsPerHost bounds each
	t.MaxIdleConnsPerHost = MaxIdlePerHost
	t.IdleConnTimeout = 90 * time.Second
	return t
}
