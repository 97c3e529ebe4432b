// Package jsonx encodes JSON for people to read: the command's output and
// the server's responses. It is encoding/json without HTML escaping, so that
// "a > b" reads "a > b" and not "a \u003e b".
package jsonx

import (
	"bytes"
	"encoding/json"
)

// Marshal returns the JSON encoding of v, like [json.Marshal], without
// HTML escaping. Text that was escaped before (a [json.RawMessage] made by
// json.Marshal, say) is unescaped too: see [Unescape].
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return Unescape(bytes.TrimSuffix(b.Bytes(), []byte{'\n'})), nil
}

// Unescape replaces the escapes \u003c, \u003e and \u0026 that
// json.Marshal writes for <, > and & in the strings of a JSON text with
// the characters themselves. The result means the same JSON value. It
// changes data in place and returns it.
func Unescape(data []byte) []byte {
	if !bytes.Contains(data, []byte(`\u00`)) {
		return data
	}
	out := data[:0]
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c != '\\' || i+1 >= len(data) {
			out = append(out, c)
			continue
		}
		if data[i+1] == 'u' && i+5 < len(data) && data[i+2] == '0' && data[i+3] == '0' {
			if r, ok := htmlChar(data[i+4], data[i+5]); ok {
				out = append(out, r)
				i += 5
				continue
			}
		}
		// Any other escape, \\ included, is kept as it is.
		out = append(out, c, data[i+1])
		i++
	}
	return out
}

// htmlChar is the character of the escape \u00XY for <, > and &.
func htmlChar(x, y byte) (byte, bool) {
	switch {
	case x == '3' && (y == 'c' || y == 'C'):
		return '<', true
	case x == '3' && (y == 'e' || y == 'E'):
		return '>', true
	case x == '2' && y == '6':
		return '&', true
	}
	return 0, false
}
