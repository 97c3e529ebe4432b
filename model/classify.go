package model

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HTTPError classifies a failed HTTP call to a model API. status is the
// response's status code, header its headers (for Retry-After), code and
// message the error code or type and the message of the vendor's error body
// (either may be empty). cause is kept as the error's Unwrap.
//
// 429 is [KindRateLimited]; 408 [KindTimeout]; 401 and 403 [KindAuth]; 5xx
// and 529 [KindServer]; a 400 or 413 whose code or message speaks of the
// context window [KindContextLength]; other 4xx [KindBadRequest]. RetryAfter
// comes from the Retry-After-Ms or Retry-After header (seconds or an HTTP
// date).
func HTTPError(provider, modelName string, status int, header http.Header, code, message string, cause error) *Error {
	e := &Error{Provider: provider, Model: modelName, Err: cause, RetryAfter: RetryAfter(header, time.Now())}
	switch {
	case status == http.StatusTooManyRequests:
		e.Kind = KindRateLimited
	case status == http.StatusRequestTimeout:
		e.Kind = KindTimeout
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = KindAuth
	case status >= 500:
		e.Kind = KindServer
	case contextTooLong(code, message):
		e.Kind = KindContextLength
	case status >= 400:
		e.Kind = KindBadRequest
	default:
		e.Kind = KindOther
	}
	msg := "HTTP " + strconv.Itoa(status)
	if text := http.StatusText(status); text != "" {
		msg += " " + text
	}
	if code != "" {
		msg += " (" + code + ")"
	}
	if message != "" {
		msg += ": " + message
	}
	e.Message = msg
	return e
}

// contextTooLong recognizes the ways vendors and open-source servers say
// that a prompt does not fit the context window.
func contextTooLong(code, message string) bool {
	if code == "context_length_exceeded" || code == "model_context_window_exceeded" {
		return true
	}
	m := strings.ToLower(message)
	for _, s := range []string{"context length", "context_length", "context window", "maximum context", "prompt is too long", "too many tokens", "exceed context limit", "exceeds the context"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// RetryAfter returns the wait in seconds that header asks for through
// Retry-After-Ms or Retry-After (delta seconds or an HTTP date, relative to
// now); 0 when it asks for none.
func RetryAfter(header http.Header, now time.Time) float64 {
	if header == nil {
		return 0
	}
	if v := header.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return ms / 1000
		}
	}
	v := header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return max(s, 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now).Seconds(), 0)
	}
	return 0
}

// TransportError classifies a failure that is not an HTTP error status: the
// call's deadline passing is [KindTimeout]; a refused, reset or dropped
// connection or a body cut short is [KindConnection]; a body that is not
// the JSON or event stream it should be is [KindServer] (the server broke
// the protocol; a retry may reach a healthy one). Cancellation of ctx is returned as ctx's error, wrapped, so that
// callers see why the call ended.
func TransportError(ctx context.Context, provider, modelName string, err error) error {
	if err == nil {
		return nil
	}
	var me *Error
	if errors.As(err, &me) {
		return err
	}
	e := &Error{Provider: provider, Model: modelName, Err: err}
	var netErr net.Error
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &Error{Kind: KindOther, Provider: provider, Model: modelName, Message: "call cancelled", Err: ctx.Err()}
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.Kind, e.Message = KindTimeout, "deadline exceeded: "+err.Error()
	case errors.As(err, &syntax) || errors.As(err, &typeErr):
		e.Kind, e.Message = KindServer, "malformed response: "+err.Error()
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) || errors.As(err, &netErr):
		e.Kind, e.Message = KindConnection, err.Error()
	default:
		e.Kind, e.Message = KindConnection, err.Error()
		if !looksLikeTransport(err) {
			e.Kind = KindOther
		}
	}
	return e
}

// looksLikeTransport reports whether err came from the HTTP client, whose
// errors are not all typed.
func looksLikeTransport(err error) bool {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if _, ok := ue.(interface{ Temporary() bool }); ok {
			return true
		}
	}
	s := err.Error()
	for _, sub := range []string{"connection", "EOF", "broken pipe", "transport", "server closed", "http2"} {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// Truncated returns the error for a stream that ended before its final
// event: a [KindConnection] error, which the runtime retries as a whole call.
func Truncated(provider, modelName, what string) *Error {
	return &Error{Kind: KindConnection, Provider: provider, Model: modelName, Message: "stream ended before " + what + " (connection cut)", Err: io.ErrUnexpectedEOF}
}
