package logjsonl

import (
	"bufio"
	"errors"
	"io"
)

// lineReader reads lines of any length in bounded memory: it keeps at most
// max bytes of a line and counts the rest.
type lineReader struct {
	br    *bufio.Reader
	max   int
	buf   []byte
	total int  // length of the line in buf, counting dropped bytes
	reset bool // buf holds a line already returned
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next complete line without its newline, cut to max
// bytes, and its full length. The line is valid until the next call. When
// the input ends (io.EOF or another error) before a newline, the bytes read
// so far are kept: a later call continues the same line if the input grows
// (as a file being written does), and rest returns them.
func (lr *lineReader) next() (line []byte, total int, err error) {
	if lr.reset {
		lr.buf, lr.total, lr.reset = lr.buf[:0], 0, false
		if cap(lr.buf) > keepCap {
			lr.buf = nil
		}
	}
	for {
		frag, err := lr.br.ReadSlice('\n')
		complete := err == nil
		if complete {
			frag = frag[:len(frag)-1]
		}
		if complete && len(lr.buf) == 0 && lr.total == 0 && len(frag) <= lr.max {
			return frag, len(frag), nil // the whole line is in bufio's buffer
		}
		lr.total += len(frag)
		if room := lr.max - len(lr.buf); room > 0 {
			lr.buf = append(lr.buf, frag[:min(room, len(frag))]...)
		}
		if complete {
			lr.reset = true
			return lr.buf, lr.total, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, 0, err
		}
	}
}

// rest returns the unfinished line kept after the input ended, and its full
// length, and forgets it.
func (lr *lineReader) rest() (line []byte, total int) {
	if lr.reset || lr.total == 0 {
		return nil, 0
	}
	lr.reset = true
	return lr.buf, lr.total
}
