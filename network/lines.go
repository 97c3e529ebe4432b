package network

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxMessage bounds one message from a peer: the answer to a hello, and
// one event of its change feed, all its lines together. A hello with the
// largest allowed capability list fits.
const maxMessage = 16 << 20

type lineReader struct{ r *bufio.Reader }

func newLineReader(r io.Reader) *lineReader { return &lineReader{bufio.NewReaderSize(r, 64<<10)} }

// line returns the next line without its end, refusing (with
// [ErrTooLarge]) one longer than limit bytes: it reads at most one buffer
// past the limit.
func (l *lineReader) line(limit int) (string, error) {
	var sb strings.Builder
	for {
		frag, err := l.r.ReadSlice('\n')
		if sb.Len()+len(frag) > limit+2 { // the line's end does not count
			return "", fmt.Errorf("%w: a feed event is larger than %d bytes", ErrTooLarge, maxMessage)
		}
		sb.Write(frag)
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return "", err
	}
	return strings.TrimRight(sb.String(), "\r\n"), nil
}

// readEvents reads server-sent events, calling fn for each, until r ends
// or fn fails. An event larger than maxMessage ends it with [ErrTooLarge].
func readEvents(r io.Reader, fn func(event string, data []byte) error) error {
	br := newLineReader(r)
	var event string
	var data []byte
	size := 0 // of the event so far
	for {
		line, err := br.line(maxMessage - size)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("feed ended")
			}
			return fmt.Errorf("feed: %w", err)
		}
		size += len(line)
		switch {
		case line == "":
			if event != "" || data != nil {
				if err := fn(event, data); err != nil {
					return err
				}
			}
			event, data, size = "", nil, 0
		case strings.HasPrefix(line, ":"):
			if err := fn("comment", nil); err != nil {
				return err
			}
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			d := strings.TrimPrefix(line[len("data:"):], " ")
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, d...)
		}
	}
}
