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

// Default returns one HTTP client shared by every provider built without a
// client of its own, so that they share a connection pool. It has no
// timeout: each call's context bounds it.
func Default() *http.Client {
	once.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 32
		t.IdleConnTimeout = 90 * time.Second
		shared = &http.Client{Transport: t}
	})
	return shared
}
