package logjsonl

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
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
// of every byte it wrote, and a copy of them while they fit in MaxHeld.
type held struct {
	hash  hash.Hash // SHA-256 of the bytes written
	n     int64
	copy  []byte // own bytes, while n <= MaxHeld
	whole bool   // copy holds every own byte
	dev   uint64
	ino   uint64
}

// hold starts holding f's content, which is empty.
func (w *Writer) hold(f *os.File) {
	w.held = &held{hash: sha256.New(), whole: true}
	if fi, err := f.Stat(); err == nil {
		w.held.dev, w.held.ino = fileID(fi)
	}
}

// record notes p, just written to the file. The caller holds w.mu.
func (h *held) record(p []byte) {
	_, _ = h.hash.Write(p)
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
			sum, n, ok, err := sumFile(w.path)
			if err == nil && ok && n == h.n && bytes.Equal(sum, h.hash.Sum(nil)) {
				return nil
			}
			t.Detail = fmt.Sprintf("changed (%d bytes of ralphd's records found, %d written)", n, h.n)
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
		data, _ = os.ReadFile(w.path)
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
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	return sumLines(f)
}

// sumLines returns the SHA-256 and length of the lines of r that are not
// the guard's, and whether every line ended in a newline. It is how Verify
// checks a log past MaxHeld against what was written; a bd_call line the
// agent printed itself then reads as the guard's, and the log as changed.
// Its memory is bounded by maxForeignLine, whatever the log's size.
func sumLines(r io.Reader) (sum []byte, n int64, ok bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	h := sha256.New()
	own := func(p []byte) {
		_, _ = h.Write(p)
		n += int64(len(p))
	}
	var line []byte // the current line, while it may be the guard's
	long := false   // the current line is too long for that: own, streamed
	for {
		chunk, rerr := br.ReadSlice('\n')
		switch {
		case long:
			own(chunk)
		case len(line)+len(chunk) > maxForeignLine:
			own(line)
			own(chunk)
			line, long = line[:0], true
		default:
			line = append(line, chunk...)
		}
		switch {
		case rerr == nil:
			if !long && !foreign(bytes.TrimSuffix(line, []byte("\n"))) {
				own(line)
			}
			line, long = line[:0], false
		case errors.Is(rerr, bufio.ErrBufferFull):
		case errors.Is(rerr, io.EOF):
			if len(line) == 0 && !long {
				return h.Sum(nil), n, true, nil
			}
			if !long && !foreign(line) {
				own(line)
			}
			return h.Sum(nil), n, false, nil
		default:
			return nil, n, false, rerr
		}
	}
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

// restore writes content to the log's path atomically and moves the
// Writer onto the new file. The caller holds w.mu.
func (w *Writer) restore(content []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(w.path), ".restore-*.log")
	if err != nil {
		return fmt.Errorf("restore run log: %w", err)
	}
	_, err = tmp.Write(content)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), w.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("restore run log: %w", err)
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND, 0)
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
