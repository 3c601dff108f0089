package logjsonl

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// MaxHeld bounds the copy of its own log a Writer keeps in memory to put
// the file back after tampering. A run log is a few MiB in practice; 16 MiB
// is what one agent line may already take ([DefaultMaxLine]). Past it the
// Writer keeps only the SHA-256 and length of what it wrote: Verify still
// tells a changed log, but can no longer restore it.
const MaxHeld = 16 << 20

// Tamper describes a run log that was found not to be what its Writer
// wrote.
type Tamper struct {
	Path     string // the log's path
	Detail   string // what was found: deleted, replaced, changed
	Restored bool   // the log was rewritten from the held copy
	Err      error  // why it could not be restored, when Restored is false
}

// held is what a Writer keeps to verify its file: the SHA-256 and length
// of the lines it wrote, as Verify reads a log past MaxHeld back (sum),
// and a copy of every byte while they fit in MaxHeld.
type held struct {
	sum   lineSum
	n     int64  // bytes written
	copy  []byte // own bytes, while n <= MaxHeld
	whole bool   // copy holds every own byte
	dev   uint64
	ino   uint64
}

// hold starts holding f's content, which is empty.
func (w *Writer) hold(f *os.File) {
	w.held = &held{sum: lineSum{h: sha256.New()}, whole: true}
	if fi, err := f.Stat(); err == nil {
		w.held.dev, w.held.ino = fileID(fi)
	}
}

// record notes p, just written to the file. The caller holds w.mu.
func (h *held) record(p []byte) {
	h.sum.write(p)
	h.n += int64(len(p))
	if h.whole && h.n <= MaxHeld {
		h.copy = append(h.copy, p...)
	} else {
		h.whole, h.copy = false, nil
	}
}

func fileID(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), st.Ino //nolint:unconvert // Dev's type differs across platforms
	}
	return 0, 0
}

// foreign reports whether line is a record another ralphd process may
// append to the log (AppendMeta): a loop_meta bd_call event from the guard.
func foreign(line []byte) bool {
	var r struct {
		Type  string `json:"type"`
		Event string `json:"event"`
	}
	return json.Unmarshal(line, &r) == nil && r.Type == TypeMeta && r.Event == EventBDCall
}

// Verify checks that the file Create opened is still what the Writer
// wrote: the same file (device and inode) at its path, holding the
// Writer's bytes in order, with only the guard's bd_call records
// ([AppendMeta]) between them. It returns nil when it is; otherwise a
// Tamper. When the Writer holds a copy of everything it wrote (see
// MaxHeld), the log is put back, atomically (a temporary file, fsync,
// rename), as the Writer's records with the guard's records that were
// found kept, and later writes go to the new file. A Writer made by New
// has nothing to verify.
//
// A bd_call record forged by the agent is not told from the guard's.
func (w *Writer) Verify() *Tamper {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held == nil || w.closed {
		return nil
	}
	h := w.held
	t := &Tamper{Path: w.path}
	fi, err := os.Stat(w.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Detail = "deleted"
	case err != nil:
		t.Detail = "unreadable: " + err.Error()
	default:
		if dev, ino := fileID(fi); dev != h.dev || ino != h.ino {
			t.Detail = "replaced by another file"
		}
	}
	if !h.whole {
		// Past MaxHeld: stream the file through SHA-256, never reading
		// it whole (a run log can be as long as the agent's output).
		if t.Detail == "" {
			var want []byte
			var wantN int64
			if c, ok := h.sum.clone(); ok {
				want, wantN, _ = c.end()
			}
			sum, n, ok, err := sumFile(w.path)
			if err == nil && ok && want != nil && n == wantN && bytes.Equal(sum, want) {
				return nil
			}
			t.Detail = fmt.Sprintf("changed (%d bytes of ralphd's records found, %d written)", n, wantN)
		}
		t.Err = fmt.Errorf("the log is over %d MiB, past what ralphd holds in memory", MaxHeld>>20)
		return t
	}
	// The Writer's own bytes are at most MaxHeld; the file may hold the
	// guard's records too. A file far larger than that was grown by
	// someone else and is not read into memory: it is put back from the
	// held copy alone.
	var data []byte
	big := fi != nil && fi.Size() > maxVerifyRead
	if t.Detail != "deleted" && !big {
		// Not os.ReadFile: a FIFO, or a link to /dev/zero, put in the
		// log's place would hang it; what is not a regular file is
		// put back from the held copy alone.
		data, _ = atomicfile.Read(w.path, maxVerifyRead)
	}
	if t.Detail == "" && big {
		t.Detail = fmt.Sprintf("changed (grown to %d bytes)", fi.Size())
	}
	// Exact: the held copy tells ralphd's records from the guard's, even
	// a bd_call line the agent printed itself.
	restored := merge(data, h.copy)
	if t.Detail == "" {
		if bytes.Equal(restored, data) {
			return nil
		}
		t.Detail = "changed"
	}
	if err := w.restore(restored); err != nil {
		t.Err = err
		return t
	}
	t.Restored = true
	return t
}

// maxVerifyRead bounds the run log Verify reads into memory while the
// Writer holds a copy of its own bytes (at most MaxHeld): room for the
// guard's records besides them.
const maxVerifyRead = 4 * MaxHeld

// maxForeignLine is the longest line sumLines still checks for being the
// guard's record; a longer line is taken as the Writer's own.
const maxForeignLine = 1 << 20

// sumFile streams the log at path through sumLines.
func sumFile(path string) (sum []byte, n int64, ok bool, err error) {
	f, err := atomicfile.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	return sumLines(f)
}

// sumLines returns the SHA-256 and length of the lines of r that are not
// the guard's, and whether every line ended in a newline. It is how Verify
// checks a log past MaxHeld against what was written, which the Writer
// sums the same way as it writes (lineSum): a bd_call record is left out
// on both sides, whether the guard appended it or ralphd wrote it itself,
// so a bd_call record deleted or forged by the agent is not told. Its
// memory is bounded by maxForeignLine, whatever the log's size.
func sumLines(r io.Reader) (sum []byte, n int64, ok bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	s := lineSum{h: sha256.New()}
	for {
		chunk, rerr := br.ReadSlice('\n')
		s.write(chunk)
		switch {
		case rerr == nil, errors.Is(rerr, bufio.ErrBufferFull):
		case errors.Is(rerr, io.EOF):
			sum, n, ok = s.end()
			return sum, n, ok, nil
		default:
			return nil, s.n, false, rerr
		}
	}
}

// lineSum hashes a stream of log lines, leaving out the guard's records
// (foreign): the SHA-256 and length of the rest. A line longer than
// maxForeignLine is taken as ralphd's own and streamed, so its memory is
// bounded whatever it is given.
type lineSum struct {
	h    hash.Hash
	n    int64
	line []byte // the current line, while it may be the guard's
	long bool   // the current line is too long for that: own, streamed
}

func (s *lineSum) own(p []byte) {
	_, _ = s.h.Write(p)
	s.n += int64(len(p))
}

// write adds p, which may hold any part of any number of lines.
func (s *lineSum) write(p []byte) {
	for len(p) > 0 {
		chunk := p
		i := bytes.IndexByte(p, '\n')
		if i >= 0 {
			chunk = p[:i+1]
		}
		p = p[len(chunk):]
		switch {
		case s.long:
			s.own(chunk)
		case len(s.line)+len(chunk) > maxForeignLine:
			s.own(s.line)
			s.own(chunk)
			s.line, s.long = s.line[:0], true
		default:
			s.line = append(s.line, chunk...)
		}
		if i >= 0 {
			if !s.long && !foreign(bytes.TrimSuffix(s.line, []byte("\n"))) {
				s.own(s.line)
			}
			s.line, s.long = s.line[:0], false
		}
	}
}

// end returns the sum of what was written, the partial last line counted
// as own unless it is the guard's, and whether the stream ended with a
// newline.
func (s *lineSum) end() (sum []byte, n int64, ok bool) {
	if len(s.line) == 0 && !s.long {
		return s.h.Sum(nil), s.n, true
	}
	if !s.long && !foreign(s.line) {
		s.own(s.line)
	}
	return s.h.Sum(nil), s.n, false
}

// clone returns a copy of s that can be ended without changing s; false
// when the hash cannot be copied (crypto/sha256's always can).
func (s *lineSum) clone() (*lineSum, bool) {
	m, ok := s.h.(encoding.BinaryMarshaler)
	if !ok {
		return nil, false
	}
	state, err := m.MarshalBinary()
	if err != nil {
		return nil, false
	}
	c := *s
	c.line = bytes.Clone(s.line)
	c.h = sha256.New()
	if u, ok := c.h.(encoding.BinaryUnmarshaler); !ok || u.UnmarshalBinary(state) != nil {
		return nil, false
	}
	return &c, true
}

// merge returns the Writer's bytes want with the guard's records found in
// data kept in place where they follow the Writer's records in order;
// anything else in data is dropped, and Writer records missing from data
// are put back.
func merge(data, want []byte) []byte {
	out := make([]byte, 0, len(want))
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i+1]
		data = data[i+1:]
		switch {
		case bytes.HasPrefix(want, line):
			out = append(out, line...)
			want = want[len(line):]
		case foreign(line[:i]):
			out = append(out, line...)
		}
	}
	return append(out, want...)
}

// restore writes content to the log's path atomically (atomicfile: with
// the mode Create gives a log) and moves the Writer onto the new file.
// The caller holds w.mu.
func (w *Writer) restore(content []byte) error {
	if err := atomicfile.Write(w.path, content, logPerm); err != nil {
		return fmt.Errorf("restore run log: %w", err)
	}
	f, err := openAppend(w.path)
	if err != nil {
		return fmt.Errorf("reopen restored run log: %w", err)
	}
	_ = w.file.Close()
	w.file, w.out = f, f
	if fi, err := f.Stat(); err == nil {
		w.held.dev, w.held.ino = fileID(fi)
	}
	return nil
}
