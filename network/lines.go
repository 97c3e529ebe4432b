package network

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// maxLine bounds one line of a feed (a hello with the largest allowed
// capability list fits).
const maxLine = 32 << 20

type lineReader struct{ r *bufio.Reader }

func newLineReader(r io.Reader) *lineReader { return &lineReader{bufio.NewReaderSize(r, 64<<10)} }

// line returns the next line without its end, refusing lines longer than
// maxLine.
func (l *lineReader) line() (string, error) {
	var sb strings.Builder
	for {
		frag, err := l.r.ReadSlice('\n')
		sb.Write(frag)
		if sb.Len() > maxLine {
			return "", errors.New("line too long")
		}
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
