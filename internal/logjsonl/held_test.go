package logjsonl

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/text"
)

// heldLog creates a run log with a few records of ralphd's and a guard
// record appended by another "process" between them, and returns the
// Writer and the content the file should have.
func heldLog(t *testing.T) (*Writer, []byte) {
	t.Helper()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w, err := CreateRun(t.TempDir(), "run-1", -1, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Meta(EventRunStart, map[string]string{"mode": "build"}); err != nil {
		t.Fatal(err)
	}
	if err := w.AgentLine(StreamStdout, []byte(`{"type":"assistant","n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := AppendMeta(w.Path(), EventBDCall, map[string]string{"argv": "bd show"}, now); err != nil {
		t.Fatal(err)
	}
	if err := w.AgentLine(StreamStdout, []byte(`{"type":"assistant","n":2}`)); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	return w, want
}

func TestVerifyRestores(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, path string, content []byte)
		detail string
		// keepsGuard: the tampering leaves the guard's record in the file.
		keepsGuard bool
	}{
		{"edit in the middle", func(t *testing.T, path string, c []byte) {
			write(t, path, bytes.Replace(c, []byte(`"n":1`), []byte(`"n":9`), 1))
		}, "changed", true},
		{"truncate", func(t *testing.T, path string, c []byte) {
			if err := os.Truncate(path, int64(len(c)/2)); err != nil {
				t.Fatal(err)
			}
		}, "changed", false},
		{"empty", func(t *testing.T, path string, _ []byte) { write(t, path, nil) }, "changed", false},
		{"delete", func(t *testing.T, path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, "deleted", false},
		{"replace with another file", func(t *testing.T, path string, c []byte) {
			other := filepath.Join(filepath.Dir(path), "other")
			write(t, other, c) // same bytes, another inode
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}, "replaced by another file", true},
		{"append junk", func(t *testing.T, path string, c []byte) {
			write(t, path, append(append([]byte{}, c...), "junk\n{\"type\":\"loop_meta\"}"...))
		}, "changed", true},
		{"delete a line", func(t *testing.T, path string, c []byte) {
			i := bytes.IndexByte(c, '\n')
			write(t, path, c[i+1:])
		}, "changed", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, want := heldLog(t)
			tt.tamper(t, w.Path(), want)
			got := w.Verify()
			if got == nil {
				t.Fatal("Verify found nothing")
			}
			if !got.Restored || got.Err != nil || got.Path != w.Path() || !strings.HasPrefix(got.Detail, tt.detail) {
				t.Fatalf("Verify = %+v, want restored %s", got, tt.detail)
			}
			// ralphd's records are back whole and in order; the guard's record
			// is kept where the agent left it (it may move), lost where the
			// agent removed it.
			after := read(t, w.Path())
			if !bytes.Equal(ralphdOnly(after), ralphdOnly(want)) {
				t.Fatalf("restored log:\n%s\nwant ralphd's records of:\n%s", after, want)
			}
			if g := len(after) - len(ralphdOnly(after)); g != 0 && g != len(want)-len(ralphdOnly(want)) {
				t.Fatalf("restored log has a changed guard record:\n%s", after)
			}
			if tt.keepsGuard && !bytes.Equal(after, want) && tt.name != "edit in the middle" && tt.name != "delete a line" {
				t.Fatalf("restored log:\n%s\nwant:\n%s", after, want)
			}
			if tt.keepsGuard && len(after) != len(want) {
				t.Fatalf("restored log lost the guard's record:\n%s", after)
			}
			// Later writes go to the restored file, which is now whole.
			if err := w.Meta(EventRunEnd, nil); err != nil {
				t.Fatal(err)
			}
			if v := w.Verify(); v != nil {
				t.Fatalf("Verify after restore = %+v", v)
			}
			wantLines := 4 // ralphd's 3 records and run_end
			if tt.keepsGuard {
				wantLines++
			}
			if n := bytes.Count(read(t, w.Path()), []byte("\n")); n != wantLines {
				t.Fatalf("log has %d lines, want %d", n, wantLines)
			}
			for _, line := range bytes.Split(bytes.TrimSuffix(read(t, w.Path()), []byte("\n")), []byte("\n")) {
				if !text.ValidJSON(line) {
					t.Fatalf("restored log has a line that is not JSON: %q", line)
				}
			}
		})
	}
}

func TestVerifyUntouched(t *testing.T) {
	w, _ := heldLog(t)
	if v := w.Verify(); v != nil {
		t.Fatalf("Verify on an untouched log = %+v", v)
	}
	// A bd_call line the agent printed itself is ralphd's record, not the
	// guard's: still untouched.
	if err := w.AgentLine(StreamStdout, []byte(`{"type":"loop_meta","event":"bd_call","data":{}}`)); err != nil {
		t.Fatal(err)
	}
	if err := AppendMeta(w.Path(), EventBDCall, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if v := w.Verify(); v != nil {
		t.Fatalf("Verify with guard records = %+v", v)
	}
	if v := New(&bytes.Buffer{}, Options{}).Verify(); v != nil {
		t.Fatalf("Verify on a Writer made by New = %+v", v)
	}
}

func TestVerifyPastHeld(t *testing.T) {
	w, _ := heldLog(t)
	w.mu.Lock()
	w.held.whole, w.held.copy = false, nil // as past MaxHeld
	w.mu.Unlock()
	if v := w.Verify(); v != nil {
		t.Fatalf("Verify on an untouched log = %+v", v)
	}
	c := read(t, w.Path())
	write(t, w.Path(), bytes.Replace(c, []byte(`"n":2`), []byte(`"n":3`), 1))
	v := w.Verify()
	if v == nil || v.Restored || v.Err == nil {
		t.Fatalf("Verify = %+v, want reported, not restored", v)
	}
}

// ralphdOnly returns log without the guard's bd_call records.
func ralphdOnly(log []byte) []byte {
	own, _ := split(log)
	return own
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHeldBound(t *testing.T) {
	w, _ := heldLog(t)
	h := w.held
	h.record(make([]byte, MaxHeld-int(h.n)))
	if !h.whole || len(h.copy) != MaxHeld {
		t.Fatalf("copy dropped at %d bytes, under MaxHeld", h.n)
	}
	h.record([]byte("x"))
	if h.whole || h.copy != nil || h.n != MaxHeld+1 {
		t.Fatalf("copy kept past MaxHeld: whole %v, %d bytes held, n %d", h.whole, len(h.copy), h.n)
	}
}

// split returns the file's lines that are not the guard's, concatenated,
// and whether every line ended in a newline, all in memory: the reference
// that sumLines, which streams, is checked against.
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

// sumLines streams what split computes in memory, for any log: the same
// SHA-256, length and newline verdict, whatever the line lengths (lines
// past maxForeignLine are the Writer's own in both, as no guard record is
// that long).
func FuzzSumLines(f *testing.F) {
	guard := `{"type":"loop_meta","event":"bd_call","data":{"argv":["close","t-a"]}}`
	f.Add([]byte("{\"a\":1}\n" + guard + "\n{\"b\":2}\n"))
	f.Add([]byte(guard))
	f.Add([]byte("no newline at the end"))
	f.Add([]byte(""))
	f.Add([]byte("\n\n\n"))
	addFixtureSeeds(f, func(b []byte) { f.Add(b) }) // recorded agent streams, as a log holds them
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
	})
}

func TestSumLinesLongLines(t *testing.T) {
	guard := `{"type":"loop_meta","event":"bd_call","data":{}}`
	long := bytes.Repeat([]byte("x"), maxForeignLine+70<<10)
	for _, data := range [][]byte{
		append(append([]byte(guard+"\n"), long...), '\n'),
		append([]byte(guard+"\n"), long...), // a long last line without a newline
		append(append(long, '\n'), guard+"\n"...),
		bytes.Repeat([]byte(guard+"\n{\"n\":1}\n"), 5000),
	} {
		check(t, data)
	}
}

func check(t *testing.T, data []byte) {
	t.Helper()
	want, wantOK := split(data)
	wantSum := sha256.Sum256(want)
	sum, n, ok, err := sumLines(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sum, wantSum[:]) || n != int64(len(want)) || ok != wantOK {
		t.Fatalf("sumLines: n=%d ok=%v, want n=%d ok=%v (sums equal: %v)", n, ok, len(want), wantOK, bytes.Equal(sum, wantSum[:]))
	}
}

// TestVerifyPastHeldOwnRecords: past MaxHeld, ralphd's own bd_call
// records (it serves the guard in-process and logs the agent's calls
// itself) and the agent's own lines that look like one read back as they
// were written: an untouched log is untouched. Before, the Writer summed
// them and the file's reading left them out, so every big log with a bd
// call read as edited, and the iteration's close was reopened.
func TestVerifyPastHeldOwnRecords(t *testing.T) {
	w, _ := heldLog(t)
	w.mu.Lock()
	w.held.whole, w.held.copy = false, nil // as past MaxHeld
	w.mu.Unlock()
	if err := w.Meta(EventBDCall, map[string]string{"argv": "bd close"}); err != nil {
		t.Fatal(err)
	}
	if err := w.AgentLine(StreamStdout, []byte(`{"type":"loop_meta","event":"bd_call","data":{}}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Meta(EventIterationEnd, map[string]int{"iteration": 1}); err != nil {
		t.Fatal(err)
	}
	if v := w.Verify(); v != nil {
		t.Fatalf("Verify on an untouched log past MaxHeld = %+v", v)
	}
	c := read(t, w.Path())
	i := bytes.Index(c, []byte(`"iteration":1`))
	write(t, w.Path(), append(c[:i:i], []byte("\"iteration\":2}}\n")...))
	if v := w.Verify(); v == nil {
		t.Fatal("Verify missed an edit of ralphd's last record past MaxHeld")
	}
}

// FuzzLineSum: however the same bytes are cut into writes, lineSum sums
// them as sumLines reads them back.
func FuzzLineSum(f *testing.F) {
	f.Add([]byte("{\"type\":\"loop_meta\",\"event\":\"bd_call\"}\n{\"a\":1}\npartial"), uint8(3))
	f.Add([]byte("\n\n{}\n"), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		s := lineSum{h: sha256.New()}
		step := int(cut) + 1
		for i := 0; i < len(b); i += step {
			s.write(b[i:min(len(b), i+step)])
		}
		c, ok := s.clone()
		if !ok {
			t.Fatal("cannot clone a sha256 lineSum")
		}
		sum, n, okNL := c.end()
		rsum, rn, rok, err := sumLines(bytes.NewReader(b))
		if err != nil || !bytes.Equal(sum, rsum) || n != rn || okNL != rok {
			t.Fatalf("written %x/%d/%v, read %x/%d/%v (%v)", sum, n, okNL, rsum, rn, rok, err)
		}
	})
}

// TestVerifyPlantedInPlace: the log replaced by a FIFO, or by a link to
// one, is put back from the held copy, and neither Verify nor the
// guard's AppendMeta blocks on it.
func TestVerifyPlantedInPlace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"FIFO", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"link to a FIFO", func(t *testing.T, path string) {
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(fifo, path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, want := heldLog(t)
			tc.plant(t, w.Path())
			done := make(chan struct{})
			var got *Tamper
			var appendErr error
			go func() {
				defer close(done)
				appendErr = AppendMeta(w.Path(), EventBDCall, map[string]string{"argv": "bd list"}, time.Now())
				got = w.Verify()
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("AppendMeta or Verify blocked on what was planted in the log's place")
			}
			if appendErr == nil {
				t.Error("AppendMeta wrote into what was planted in the log's place")
			}
			if got == nil || !got.Restored || got.Err != nil || got.Detail != "replaced by another file" {
				t.Fatalf("Verify = %+v, want restored, replaced by another file", got)
			}
			if after := read(t, w.Path()); !bytes.Equal(ralphdOnly(after), ralphdOnly(want)) {
				t.Fatalf("restored log:\n%s\nwant ralphd's records of:\n%s", after, want)
			}
		})
	}
}
