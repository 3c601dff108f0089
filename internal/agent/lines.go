package agent

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// DefaultMaxLine is the longest line Run hands to a sink in one piece. A
// longer line is delivered in pieces of at most this many bytes.
const DefaultMaxLine = 16 << 20

// minMaxLine is the smallest accepted line bound; bufio needs some room.
const minMaxLine = 64

// readLines reads r to its end and calls fn once per line, without the
// trailing newline. Memory stays bounded by maxLine: a line longer than
// maxLine is passed to fn in consecutive pieces of exactly maxLine bytes,
// followed by the non-empty rest, so that no byte is dropped. The slice passed to fn is only valid during the call. A final
// line without a newline is delivered too. readLines returns nil at EOF and
// the read error otherwise.
func readLines(r io.Reader, maxLine int, fn func(line []byte)) error {
	maxLine = max(maxLine, minMaxLine)
	br := bufio.NewReaderSize(r, min(maxLine, 64<<10))
	var pending []byte // a line longer than the bufio buffer, being assembled
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			frag = frag[:len(frag)-1] // drop '\n'
			if len(pending) == 0 {
				fn(frag)
				continue
			}
			pending = appendChunked(pending, frag, maxLine, fn)
			fn(pending)
			pending = pending[:0]
		case errors.Is(err, bufio.ErrBufferFull):
			pending = appendChunked(pending, frag, maxLine, fn)
		default:
			if len(frag) > 0 {
				pending = appendChunked(pending, frag, maxLine, fn)
			}
			if len(pending) > 0 {
				fn(pending)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// appendChunked appends frag to pending and hands a full maxLine-sized
// piece to fn whenever more bytes follow it, so len(pending) never exceeds
// maxLine. It returns the new pending.
func appendChunked(pending, frag []byte, maxLine int, fn func([]byte)) []byte {
	for len(frag) > 0 {
		room := maxLine - len(pending)
		n := min(room, len(frag))
		pending = append(pending, frag[:n]...)
		frag = frag[n:]
		if len(pending) == maxLine && len(frag) > 0 {
			fn(pending)
			pending = pending[:0]
		}
	}
	return pending
}

// tailBuffer keeps the last size bytes written to it, for error messages.
type tailBuffer struct {
	size int
	buf  []byte
}

// add appends line and a newline, dropping the oldest bytes beyond size.
func (t *tailBuffer) add(line []byte) {
	if t.size <= 0 {
		return
	}
	if len(line) >= t.size {
		t.buf = append(t.buf[:0], line[len(line)-t.size:]...)
		return
	}
	t.buf = append(t.buf, line...)
	t.buf = append(t.buf, '\n')
	if len(t.buf) > 2*t.size {
		n := copy(t.buf, t.buf[len(t.buf)-t.size:])
		t.buf = t.buf[:n]
	}
}

// String returns the kept tail.
func (t *tailBuffer) String() string {
	if len(t.buf) > t.size {
		return string(t.buf[len(t.buf)-t.size:])
	}
	return string(t.buf)
}

// eventText is how an event reads in Outcome.OutputTail: what the agent
// said, "$ command" for a command it ran, and the command's result.
func eventText(ev Event) string {
	switch ev.Kind {
	case EventText, EventResult, EventToolResult:
		return strings.TrimSpace(ev.Text)
	case EventToolCall:
		if ev.Command != "" {
			return "$ " + ev.Command
		}
		return "[" + ev.Tool + "]"
	case EventError:
		return "error: " + strings.TrimSpace(ev.Text)
	}
	return ""
}
