package logjsonl

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

const (
	// readSize is the size of CopyLines' read buffer (a pipe holds 64 KiB).
	readSize = 64 << 10
	// flushSize is the size at which a batch of records is written out
	// before the current read is fully processed.
	flushSize = 256 << 10
	// keepCap is the largest buffer kept for reuse after a long line.
	keepCap = 1 << 20
)

// splitter turns the bytes of one stream into records. It is used by one
// goroutine; only flush touches the Writer.
type splitter struct {
	w        *Writer
	stream   string
	pass     bool // JSON object lines pass through verbatim (stdout only)
	max      int  // the bound on a line
	chunkMax int  // the most bytes of one chunk

	tag []byte // the worker tag every record gets (see WorkerKey); nil for none

	pending []byte // the current line so far, at most max bytes
	chunk   int    // chunks of the current line already emitted
	out     []byte // records not yet written
	err     error  // first write error
}

func (w *Writer) newSplitter(stream string) *splitter {
	return &splitter{w: w, stream: stream, pass: stream == StreamStdout, max: w.maxLine, chunkMax: min(w.maxLine, ChunkSize)}
}

// feed processes data. Complete lines become records in s.out; the bytes
// after the last newline are kept as the start of the next line.
func (s *splitter) feed(data []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			s.add(data)
			return
		}
		line := data[:i]
		data = data[i+1:]
		if len(s.pending) == 0 && s.chunk == 0 && len(line) <= s.max {
			s.finish(line) // the common case: no copy
			continue
		}
		s.add(line)
		s.endLine()
	}
}

// add appends b to the current line. When the line grows past the bound
// (and more bytes follow, so a line of exactly max bytes is not chunked),
// what it holds is written as chunks; after that, chunks are written each
// time chunkMax bytes have gathered.
func (s *splitter) add(b []byte) {
	for len(b) > 0 {
		limit := s.max
		if s.chunk > 0 {
			limit = s.chunkMax
		}
		room := limit - len(s.pending)
		if room <= 0 {
			s.emitChunks()
			continue
		}
		n := min(room, len(b))
		s.pending = append(s.pending, b[:n]...)
		b = b[n:]
	}
}

// emitChunks writes the pending bytes as non-final chunks of chunkMax
// bytes, less when that would split a multi-byte UTF-8 character, and keeps
// the rest (less than chunkMax bytes) for the next chunk.
func (s *splitter) emitChunks() {
	start := 0
	for len(s.pending)-start >= s.chunkMax {
		cut := runeCut(s.pending, start, start+s.chunkMax)
		s.chunk++
		s.appendWrapped(s.pending[start:cut], s.chunk, false)
		s.maybeFlush()
		start = cut
	}
	rest := copy(s.pending, s.pending[start:])
	s.pending = s.pending[:rest]
}

// runeCut moves cut back by at most 3 bytes, but never to start, so that
// p[start:cut] does not end inside a UTF-8 character.
func runeCut(p []byte, start, cut int) int {
	for i := cut - 1; i > start && i >= cut-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:cut]) {
				return i
			}
			return cut
		}
	}
	return cut
}

// endLine finishes the current line, which may be empty.
func (s *splitter) endLine() {
	s.finish(s.pending)
	s.pending = s.pending[:0]
	if cap(s.pending) > keepCap {
		s.pending = nil
	}
}

// finish turns the rest of a line into a record.
func (s *splitter) finish(line []byte) {
	switch {
	case s.chunk > 0:
		s.appendWrapped(line, s.chunk+1, true)
		s.chunk = 0
	case s.pass && isJSONObject(line) && !claimsReserved(line):
		if s.tag != nil {
			s.out = appendTagged(s.out, line, s.tag)
		} else {
			s.out = append(s.out, line...)
		}
		s.out = append(s.out, '\n')
	default:
		s.appendWrapped(line, 0, false)
	}
	s.maybeFlush()
}

// appendWrapped appends an agent_output record; chunk 0 means the whole
// line, without chunk fields.
func (s *splitter) appendWrapped(line []byte, chunk int, final bool) {
	s.out = append(s.out, '{')
	if s.tag != nil {
		s.out = append(s.out, s.tag...)
		s.out = append(s.out, ',')
	}
	s.out = append(s.out, `"type":"agent_output","stream":`...)
	s.out = appendJSONString(s.out, []byte(s.stream))
	if chunk > 0 {
		s.out = append(s.out, `,"chunk":`...)
		s.out = strconv.AppendInt(s.out, int64(chunk), 10)
		s.out = append(s.out, `,"final":`...)
		s.out = strconv.AppendBool(s.out, final)
	}
	s.out = append(s.out, `,"line":`...)
	s.out = appendJSONString(s.out, line)
	s.out = append(s.out, '}', '\n')
}

func (s *splitter) maybeFlush() {
	if len(s.out) >= flushSize {
		s.flush()
	}
}

// flush writes the collected records in one Write call. After a write
// error it drops records, remembering the first error.
func (s *splitter) flush() {
	if len(s.out) == 0 {
		return
	}
	if s.err == nil {
		s.err = s.w.write(s.out)
	}
	s.out = s.out[:0]
	if cap(s.out) > keepCap {
		s.out = nil
	}
}

// claimsReserved reports whether a valid JSON object line has a top-level
// key only ralphd writes: a "type" whose value is "loop_meta" (only ralphd
// writes events), or a "ralph_worker" (WorkerKey: only ralphd tags lines
// with their worker). Such an agent line is wrapped instead, so that it
// can pass neither for one of ralphd's events nor for another worker's
// line.
func claimsReserved(line []byte) bool {
	// Fast path: the value or the key, or a key or value with escapes,
	// must appear.
	if !bytes.Contains(line, []byte("loop_meta")) && !bytes.Contains(line, []byte(WorkerKey)) && !bytes.Contains(line, []byte(`\u`)) {
		return false
	}
	claims := false
	gjson.ParseBytes(line).ForEach(func(key, value gjson.Result) bool {
		k := key.String()
		if k == WorkerKey || (k == "type" && value.Type == gjson.String && value.String() == TypeMeta) {
			claims = true
			return false
		}
		return true
	})
	return claims
}
