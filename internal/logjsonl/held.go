package logjsonl

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
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
	data, err := os.ReadFile(w.path)
	fi, serr := os.Stat(w.path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(serr, fs.ErrNotExist):
		t.Detail = "deleted"
	case err != nil || serr != nil:
		t.Detail = "unreadable: " + errors.Join(err, serr).Error()
	default:
		if dev, ino := fileID(fi); dev != h.dev || ino != h.ino {
			t.Detail = "replaced by another file"
		}
	}
	var restored []byte
	if t.Detail == "" {
		if h.whole {
			// Exact: the held copy tells ralphd's records from the guard's,
			// even a bd_call line the agent printed itself.
			restored = merge(data, h.copy)
			if bytes.Equal(restored, data) {
				return nil
			}
			t.Detail = "changed"
		} else {
			own, ok := split(data)
			sum := sha256.Sum256(own)
			if ok && int64(len(own)) == h.n && bytes.Equal(sum[:], h.hash.Sum(nil)) {
				return nil
			}
			t.Detail = fmt.Sprintf("changed (%d bytes of ralphd's records found, %d written)", len(own), h.n)
		}
	}
	if !h.whole {
		t.Err = fmt.Errorf("the log is over %d MiB, past what ralphd holds in memory", MaxHeld>>20)
		return t
	}
	if restored == nil {
		restored = merge(data, h.copy)
	}
	if err := w.restore(restored); err != nil {
		t.Err = err
		return t
	}
	t.Restored = true
	return t
}

// split returns the file's lines that are not the guard's, concatenated,
// and whether every line ended in a newline. It is how Verify checks a log
// past MaxHeld against the SHA-256 of what was written; a bd_call line the
// agent printed itself then reads as the guard's, and the log as changed.
func split(data []byte) (own []byte, ok bool) {
	ok = true
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data
		if i < 0 {
			ok = false
		} else {
			line = data[:i+1]
		}
		data = data[len(line):]
		if !foreign(bytes.TrimSuffix(line, []byte("\n"))) {
			own = append(own, line...)
		}
	}
	return own, ok
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
