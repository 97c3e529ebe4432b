package model_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want float64
	}{
		{http.Header{"Retry-After": {"7"}}, 7},
		{http.Header{"Retry-After": {"0.5"}}, 0.5},
		{http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 0.25},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{nil, 0},
	} {
		if got := model.RetryAfter(tc.h, now); got != tc.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestHTTPErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		status        int
		code, message string
		want          model.Kind
	}{
		{429, "", "", model.KindRateLimited},
		{408, "", "", model.KindTimeout},
		{401, "", "", model.KindAuth},
		{500, "", "", model.KindServer},
		{529, "overloaded_error", "", model.KindServer},
		{400, "context_length_exceeded", "", model.KindContextLength},
		{400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum", model.KindContextLength},
		{400, "", "bad temperature", model.KindBadRequest},
		{409, "", "", model.KindBadRequest},
	} {
		e := model.HTTPError("p", "m", tc.status, nil, tc.code, tc.message, nil)
		if e.Kind != tc.want {
			t.Errorf("HTTPError(%d, %q, %q) kind = %s, want %s", tc.status, tc.code, tc.message, e.Kind, tc.want)
		}
	}
}
