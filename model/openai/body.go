package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/swarmrt/swarm/model"
)

// chatBody encodes req as a Chat Completions request body.
//
// The body is written here, not through the SDK's request params: the SDK
// encodes them by reflection, which cost as much CPU per call as the rest
// of a journaled round. The parts that repeat on every call of a run — a
// tool's definition, the result schema — are checked and encoded once and
// then copied.
func (m *Model) chatBody(req *model.Request, name string, stream bool) ([]byte, error) {
	b := make([]byte, 0, 512+len(req.System)+256*len(req.Messages)+256*len(req.Tools)+partsBytes(req.Messages))
	b = append(b, `{"model":`...)
	b = appendString(b, name)
	b = append(b, `,"messages":[`...)
	if req.System != "" {
		b = append(b, `{"role":"system","content":`...)
		b = appendString(b, req.System)
		b = append(b, '}')
	}
	if err := model.CheckParts(m.provider, name, req.Messages); err != nil {
		return nil, err
	}
	var pending []int // tool messages whose parts follow them as a user message
	for i := range req.Messages {
		msg := &req.Messages[i]
		var err error
		if len(pending) > 0 && msg.Role != model.RoleTool {
			b = append(b, ',')
			if b, err = m.appendToolParts(b, name, req.Messages, pending); err != nil {
				return nil, err
			}
			pending = pending[:0]
		}
		if i > 0 || req.System != "" {
			b = append(b, ',')
		}
		switch msg.Role {
		case model.RoleUser:
			b = append(b, `{"role":"user","content":`...)
			if b, err = m.appendContent(b, name, i, msg, true); err != nil {
				return nil, err
			}
		case model.RoleTool:
			b = append(b, `{"role":"tool","tool_call_id":`...)
			b = appendString(b, msg.ToolCallID)
			b = append(b, `,"content":`...)
			if b, err = m.appendContent(b, name, i, msg, false); err != nil {
				return nil, err
			}
			if hasMedia(msg.Parts) {
				pending = append(pending, i)
			}
		case model.RoleAssistant:
			if len(msg.Parts) > 0 {
				return nil, model.Unsupported(m.provider, name, i, 0, &msg.Parts[0], "an assistant message takes no parts")
			}
			b = append(b, `{"role":"assistant"`...)
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				b = append(b, `,"content":`...)
				b = appendString(b, msg.Content)
			}
			if len(msg.ToolCalls) > 0 {
				b = append(b, `,"tool_calls":[`...)
				for j, tc := range msg.ToolCalls {
					if j > 0 {
						b = append(b, ',')
					}
					b = append(b, `{"id":`...)
					b = appendString(b, tc.ID)
					b = append(b, `,"type":"function","function":{"name":`...)
					b = appendString(b, tc.Name)
					b = append(b, `,"arguments":`...)
					if len(tc.Arguments) == 0 {
						b = append(b, `"{}"`...)
					} else {
						b = appendString(b, string(tc.Arguments))
					}
					b = append(b, "}}"...)
				}
				b = append(b, ']')
			}
		default:
			return nil, m.badRequest(name, "message with unknown role "+string(msg.Role))
		}
		b = append(b, '}')
	}
	if len(pending) > 0 {
		var err error
		b = append(b, ',')
		if b, err = m.appendToolParts(b, name, req.Messages, pending); err != nil {
			return nil, err
		}
	}
	b = append(b, ']')
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range req.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			enc, err := chatTool(t)
			if err != nil {
				return nil, m.badRequest(name, "tool "+t.Name+": "+err.Error())
			}
			b = append(b, enc...)
		}
		b = append(b, ']')
	}
	if schema := m.resultSchema(req.ResultSchema); schema != nil {
		b = append(b, `,"response_format":{"type":"json_schema","json_schema":{"name":"result","strict":false,"schema":`...)
		b = append(b, schema...)
		b = append(b, "}}"...)
	}
	if m.maxTokens > 0 {
		if m.provider == "openai" {
			b = append(b, `,"max_completion_tokens":`...)
		} else {
			b = append(b, `,"max_tokens":`...)
		}
		b = strconv.AppendInt(b, m.maxTokens, 10)
	}
	if stream {
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(b, '}'), nil
}

// resultSchema returns the result schema, compacted, when structured output
// applies: it is on and the schema describes a JSON object (OpenAI requires
// one at the root). The answer is cached per schema.
func (m *Model) resultSchema(schema json.RawMessage) []byte {
	if !m.structured || len(schema) == 0 {
		return nil
	}
	return cached(&schemaCache, string(schema), func() []byte {
		var obj struct {
			Type any `json:"type"`
		}
		var c bytes.Buffer
		if json.Unmarshal(schema, &obj) != nil || obj.Type != "object" || json.Compact(&c, schema) != nil {
			return nil
		}
		return c.Bytes()
	})
}

// chatTool returns the JSON of a tool definition in a chat request. It is
// encoded once and cached: the same definitions go out with every call of
// a run.
func chatTool(t model.ToolDef) ([]byte, error) {
	var err error
	enc := cached(&toolCache, t.Name+"\x00"+t.Description+"\x00"+string(t.Parameters), func() []byte {
		params := []byte(`{"type":"object","properties":{}}`)
		if len(t.Parameters) > 0 {
			var obj map[string]any
			if uerr := json.Unmarshal(t.Parameters, &obj); uerr != nil {
				err = fmt.Errorf("tool parameters are not a JSON object: %w", uerr)
				return nil
			}
			var c bytes.Buffer
			_ = json.Compact(&c, t.Parameters) // valid: it was just decoded
			params = c.Bytes()
		}
		b := append([]byte(`{"type":"function","function":{"name":`), nil...)
		b = appendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = appendString(b, t.Description)
		}
		b = append(b, `,"parameters":`...)
		b = append(b, params...)
		return append(b, "}}"...)
	})
	return enc, err
}

// A cache of encoded request parts, keyed by their source. It holds at
// most maxCached entries per kind; past that, parts are encoded on every
// call. A failed encoding (nil) is not cached.
type partCache struct {
	m sync.Map
	n atomic.Int64
}

const maxCached = 4096

var schemaCache, toolCache partCache

func cached(c *partCache, key string, encode func() []byte) []byte {
	if v, ok := c.m.Load(key); ok {
		return v.([]byte)
	}
	enc := encode()
	if enc != nil && c.n.Add(1) <= maxCached {
		c.m.Store(key, enc)
	}
	return enc
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string, escaping as encoding/json does
// except for HTML characters, which need no escaping in a request body.
// Invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but not valid JavaScript;
		// encoding/json escapes them, and so does this.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendContent appends a message's content: its text as a JSON string
// when it has no parts, else a list of content parts, its text first. A
// user message takes every kind of part (media too); a tool message takes
// only text parts, its media going in a user message after the tool
// messages (see [Model.appendToolParts]).
func (m *Model) appendContent(b []byte, name string, i int, msg *model.Message, media bool) ([]byte, error) {
	if len(msg.Parts) == 0 {
		return appendString(b, msg.Content), nil
	}
	b = append(b, '[')
	n := 0
	if msg.Content != "" {
		b = append(b, `{"type":"text","text":`...)
		b = appendString(b, msg.Content)
		b = append(b, '}')
		n++
	}
	for j := range msg.Parts {
		p := &msg.Parts[j]
		if p.Type != model.PartText && !media {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = m.appendPart(b, name, i, j, p); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		b = append(b, `{"type":"text","text":""}`...)
	}
	return append(b, ']'), nil
}

// appendPart appends one part as a Chat Completions content part: text,
// image_url (a URL or a data: URL), file (file_data as a data: URL, with
// its filename) or input_audio (base64, wav or mp3). Files and audio given
// by URL, and audio in other formats, are not accepted by the API.
func (m *Model) appendPart(b []byte, name string, i, j int, p *model.Part) ([]byte, error) {
	switch p.Type {
	case model.PartText:
		b = append(b, `{"type":"text","text":`...)
		b = appendString(b, p.Text)
		return append(b, '}'), nil
	case model.PartImage:
		b = append(b, `{"type":"image_url","image_url":{"url":`...)
		b = m.appendDataURL(b, p)
		return append(b, "}}"...), nil
	case model.PartFile:
		if len(p.Data) == 0 && !strings.HasPrefix(p.URL, "data:") {
			return nil, model.Unsupported(m.provider, name, i, j, p, "the Chat Completions API takes files as data, not by URL")
		}
		b = append(b, `{"type":"file","file":{"filename":`...)
		b = appendString(b, fileName(p))
		b = append(b, `,"file_data":`...)
		b = m.appendDataURL(b, p)
		return append(b, "}}"...), nil
	case model.PartAudio:
		format := audioFormat(p.MediaType)
		if format == "" || len(p.Data) == 0 {
			return nil, model.Unsupported(m.provider, name, i, j, p, "the Chat Completions API takes audio as wav or mp3 data")
		}
		b = append(b, `{"type":"input_audio","input_audio":{"data":"`...)
		b = m.blobs.appendBase64(b, p)
		b = append(b, `","format":"`...)
		b = append(b, format...)
		return append(b, `"}}`...), nil
	}
	return nil, model.Unsupported(m.provider, name, i, j, p, "unknown part type")
}

// appendToolParts appends the user message that carries the images, files
// and audio of the tool messages at indexes at: the Chat Completions API
// takes only text in a tool message. Each tool's parts are introduced by a
// text part naming its call.
func (m *Model) appendToolParts(b []byte, name string, msgs []model.Message, at []int) ([]byte, error) {
	b = append(b, `{"role":"user","content":[`...)
	for k, i := range at {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = appendString(b, "Attachments of tool call "+msgs[i].ToolCallID+":")
		b = append(b, '}')
		for j := range msgs[i].Parts {
			p := &msgs[i].Parts[j]
			if p.Type == model.PartText {
				continue
			}
			b = append(b, ',')
			var err error
			if b, err = m.appendPart(b, name, i, j, p); err != nil {
				return nil, err
			}
		}
	}
	return append(b, "]}"...), nil
}

// hasMedia reports whether parts hold anything but text.
func hasMedia(parts []model.Part) bool {
	for i := range parts {
		if parts[i].Type != model.PartText {
			return true
		}
	}
	return false
}

// appendDataURL appends a part's URL, or its bytes as a data: URL, as a
// JSON string.
func (m *Model) appendDataURL(b []byte, p *model.Part) []byte {
	if len(p.Data) == 0 {
		return appendString(b, p.URL)
	}
	b = appendString(b, "data:"+p.MediaType+";base64,")
	b = b[:len(b)-1] // reopen the string
	b = m.blobs.appendBase64(b, p)
	return append(b, '"')
}

// encodedBlobs holds the base64 of blob parts by hash, up to
// maxEncodedBlobs bytes; past that it starts again empty.
type encodedBlobs struct {
	mu    sync.Mutex
	m     map[string][]byte
	bytes int
}

const maxEncodedBlobs = 64 << 20

// appendBase64 appends the base64 of p's bytes, from the cache when p is a
// loaded blob (its hash names its bytes).
func (c *encodedBlobs) appendBase64(b []byte, p *model.Part) []byte {
	if p.Blob == "" || !model.IsBlobHash(p.Blob) {
		return base64.StdEncoding.AppendEncode(b, p.Data)
	}
	c.mu.Lock()
	enc, ok := c.m[p.Blob]
	c.mu.Unlock()
	if ok {
		return append(b, enc...)
	}
	n := len(b)
	b = base64.StdEncoding.AppendEncode(b, p.Data)
	enc = slices.Clone(b[n:])
	c.mu.Lock()
	if c.m == nil || c.bytes+len(enc) > maxEncodedBlobs {
		c.m, c.bytes = map[string][]byte{}, 0
	}
	if len(enc) <= maxEncodedBlobs {
		c.m[p.Blob], c.bytes = enc, c.bytes+len(enc)
	}
	c.mu.Unlock()
	return b
}

// audioFormat returns the API's name of an audio media type: wav or mp3
// ("" for others).
func audioFormat(mediaType string) string {
	mt, _, _ := strings.Cut(mediaType, ";")
	switch strings.TrimSpace(strings.ToLower(mt)) {
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave":
		return "wav"
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	}
	return ""
}

// partsBytes estimates the encoded size of the messages' parts, so that a
// request with a large image is built without growing its buffer.
func partsBytes(msgs []model.Message) int {
	n := 0
	for i := range msgs {
		for j := range msgs[i].Parts {
			p := &msgs[i].Parts[j]
			n += 96 + len(p.Text) + len(p.URL) + len(p.Name) + len(p.MediaType) + base64.StdEncoding.EncodedLen(len(p.Data))
		}
	}
	return n
}
