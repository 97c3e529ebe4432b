package openai

import (
	"context"
	"errors"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/swarmrt/swarm/model"
)

// classify maps an SDK error to a [*model.Error].
func (m *Model) classify(ctx context.Context, name string, err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		var header http.Header
		if apiErr.Response != nil {
			header = apiErr.Response.Header
		}
		code := apiErr.Code
		if code == "" {
			code = apiErr.Type
		}
		return model.HTTPError(m.provider, name, apiErr.StatusCode, header, code, apiErr.Message, err)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return streamError(m.provider, name, se.Event.Data, err)
	}
	return model.TransportError(ctx, m.provider, name, err)
}

// streamError classifies an error event received mid-stream, such as
// {"error": {"type": "server_error", "message": "..."}}: the server failed
// after answering 200, so the call is retried unless the event says why it
// will not succeed.
func streamError(provider, name string, data []byte, err error) error {
	e := gjson.GetBytes(data, "error")
	if !e.IsObject() {
		e = gjson.GetBytes(data, "response.error")
	}
	code := e.Get("code").String()
	if code == "" {
		code = e.Get("type").String()
	}
	status := http.StatusInternalServerError
	switch code {
	case "rate_limit_exceeded", "rate_limit_error", "tokens", "requests":
		status = http.StatusTooManyRequests
	case "context_length_exceeded", "invalid_request_error", "invalid_prompt":
		status = http.StatusBadRequest
	case "overloaded_error":
		status = 529
	}
	me := model.HTTPError(provider, name, status, nil, code, e.Get("message").String(), err)
	me.Message = "error event in stream: " + me.Message
	return me
}
