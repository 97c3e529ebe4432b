package model

import (
	"errors"
	"fmt"
)

// Kind classifies a model failure for the retry policy.
type Kind string

// The kinds of model failure. Retryable kinds are RateLimited, Server,
// Timeout and Connection.
const (
	KindAuth          Kind = "auth"
	KindRateLimited   Kind = "rate_limited"
	KindBadRequest    Kind = "bad_request"
	KindContextLength Kind = "context_too_long"
	KindServer        Kind = "server_error"
	KindTimeout       Kind = "timeout"
	KindConnection    Kind = "connection"
	KindInvalidOutput Kind = "invalid_output"
	// KindRefused: the model declined to answer (a refusal or a content
	// filter). Retrying the same request is unlikely to help.
	KindRefused Kind = "refused"
	KindOther   Kind = "other"
)

// Retryable reports whether a failure of kind k may succeed when retried.
func (k Kind) Retryable() bool {
	switch k {
	case KindRateLimited, KindServer, KindTimeout, KindConnection:
		return true
	}
	return false
}

// Error is a classified model failure.
type Error struct {
	Kind     Kind
	Provider string
	Model    string
	Message  string
	// RetryAfter is the server's requested wait in seconds, when it gave one.
	RetryAfter float64
	Err        error
}

func (e *Error) Error() string {
	name := e.Provider
	if e.Model != "" {
		name += ":" + e.Model
	}
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("model %s: %s: %s", name, e.Kind, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the classification of err: the Kind of the first *Error in
// its chain, KindOther otherwise.
func KindOf(err error) Kind {
	var me *Error
	if errors.As(err, &me) {
		return me.Kind
	}
	return KindOther
}
