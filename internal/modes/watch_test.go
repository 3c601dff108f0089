package modes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// fakeDolt lays out files the way bd 1.0.5's embedded Dolt store does.
func fakeDolt(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".beads")
	noms := filepath.Join(dir, "embeddeddolt", "rt", ".dolt", "noms")
	must(t, os.MkdirAll(noms, 0o755))
	must(t, os.WriteFile(filepath.Join(noms, "manifest"), []byte("v1:hash-a"), 0o644))
	must(t, os.WriteFile(filepath.Join(noms, "journal.idx"), []byte("idx"), 0o644))
	must(t, os.WriteFile(filepath.Join(noms, "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"), make([]byte, 300<<10), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "embeddeddolt", ".lock"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "last-touched"), []byte("rt-1"), 0o644))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func rewrite(t *testing.T, path string, data []byte) {
	t.Helper()
	must(t, os.WriteFile(path, data, 0o644))
	later := time.Now().Add(time.Minute)
	must(t, os.Chtimes(path, later, later))
}

func TestFingerprint(t *testing.T) {
	noms := func(dir, f string) string { return filepath.Join(dir, "embeddeddolt", "rt", ".dolt", "noms", f) }
	journal := "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"
	tests := []struct {
		name    string
		change  func(t *testing.T, dir string)
		changed bool
	}{
		{"read: same bytes rewritten", func(t *testing.T, dir string) {
			rewrite(t, noms(dir, "manifest"), []byte("v1:hash-a"))
			rewrite(t, noms(dir, "journal.idx"), []byte("idx"))
			rewrite(t, noms(dir, journal), make([]byte, 300<<10))
		}, false},
		{"show rewrites last-touched", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, "last-touched"), []byte("rt-2"))
		}, false},
		{"lock file churn", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, "embeddeddolt", ".lock"), []byte("pid"))
		}, false},
		{"write: manifest hash changes", func(t *testing.T, dir string) {
			rewrite(t, noms(dir, "manifest"), []byte("v1:hash-b"))
		}, true},
		{"write: journal grows", func(t *testing.T, dir string) {
			f, err := os.OpenFile(noms(dir, journal), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = f.Write([]byte("chunk"))
			must(t, err)
			must(t, f.Close())
		}, true},
		{"new data file", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "issues.jsonl"), []byte("{}\n"), 0o644))
		}, true},
		{"big file: change in the tail", func(t *testing.T, dir string) {
			b := make([]byte, 300<<10)
			b[len(b)-10] = 1
			rewrite(t, noms(dir, journal), b)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			dir := fakeDolt(t)
			before, err := Fingerprint(dir)
			is.NoErr(err)
			tt.change(t, dir)
			after, err := Fingerprint(dir)
			is.NoErr(err)
			is.Equal(before != after, tt.changed) // content decides, not mtime
		})
	}
}

func TestFingerprintAbsent(t *testing.T) {
	is := is.New(t)
	fp, err := Fingerprint(filepath.Join(t.TempDir(), "nope"))
	is.NoErr(err)
	is.Equal(fp, "absent")
}

func waitAsync(w *Waiter, since string) (<-chan string, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan string, 1)
	go func() {
		fp, err := w.Wait(ctx, since)
		if err != nil {
			fp = "error: " + err.Error()
		}
		ch <- fp
	}()
	return ch, cancel
}

// watching is a Waiter on a fake Dolt store with the given debounce (the
// poll an hour), waiting since the store's fingerprint, once it has made
// its first check; checks counts its checks.
type watching struct {
	dir, since string
	checks     *atomic.Int32
	ch         <-chan string
}

func startWatching(t *testing.T, debounce time.Duration) watching {
	t.Helper()
	w := watching{dir: fakeDolt(t), checks: &atomic.Int32{}}
	var err error
	if w.since, err = Fingerprint(w.dir); err != nil {
		t.Fatal(err)
	}
	waiter := &Waiter{Dir: w.dir, Debounce: debounce, Poll: time.Hour, OnCheck: func(string) { w.checks.Add(1) }}
	var cancel context.CancelFunc
	w.ch, cancel = waitAsync(waiter, w.since)
	t.Cleanup(cancel)
	for w.checks.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	return w
}

func TestWaitWakesOnWriteNotOnRead(t *testing.T) {
	is := is.New(t)
	wt := startWatching(t, 20*time.Millisecond)
	dir, since, checks, ch := wt.dir, wt.since, wt.checks, wt.ch

	// The watcher has done its first check: simulate reads.
	manifest := filepath.Join(dir, "embeddeddolt", "rt", ".dolt", "noms", "manifest")
	rewrite(t, manifest, []byte("v1:hash-a"))
	rewrite(t, filepath.Join(dir, "last-touched"), []byte("rt-9"))
	for checks.Load() < 2 { // the read's events were looked at...
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case fp := <-ch:
		t.Fatalf("woke on a read: %s", fp) // ...and did not wake the waiter
	default:
	}
	rewrite(t, manifest, []byte("v1:hash-b"))
	fp := <-ch
	// It woke on the write. (Under load it may have looked between the
	// write's truncate and its data, so the fingerprint it returns is of
	// a changed content, not necessarily the final one.)
	is.True(fp != since && !strings.HasPrefix(fp, "error:"))
}

// TestWaitWakesAmidReads: reads that never pause (another process's bd
// calls, each touching the tracker's files) do not hold a write's wake
// back until the poll.
func TestWaitWakesAmidReads(t *testing.T) {
	is := is.New(t)
	wt := startWatching(t, 200*time.Millisecond)
	dir, since, ch := wt.dir, wt.since, wt.ch
	stop := make(chan struct{})
	done := make(chan struct{})
	idx := filepath.Join(dir, "embeddeddolt", "rt", ".dolt", "noms", "journal.idx")
	go func() { // a read every 20 ms (same bytes), never a pause of a debounce
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				_ = os.WriteFile(idx, []byte("idx"), 0o644)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	time.Sleep(100 * time.Millisecond)
	must(t, os.WriteFile(filepath.Join(dir, "issues.jsonl"), []byte("{}\n"), 0o644))
	select {
	case fp := <-ch:
		is.True(fp != since && !strings.HasPrefix(fp, "error:"))
	case <-time.After(10 * time.Second):
		t.Fatal("a write amid reads that never pause did not wake the waiter")
	}
}

func TestWaitSurvivesRecreate(t *testing.T) {
	is := is.New(t)
	dir := fakeDolt(t)
	since, err := Fingerprint(dir)
	is.NoErr(err)
	w := &Waiter{Dir: dir, Debounce: 20 * time.Millisecond, Poll: time.Hour}
	ch, cancel := waitAsync(w, since)
	defer cancel()
	is.NoErr(os.RemoveAll(dir))
	fp := <-ch
	is.True(fp != since) // the removal itself is a change
	gone, err := Fingerprint(dir)
	is.NoErr(err)
	is.Equal(gone, "absent")

	ch, cancel2 := waitAsync(w, gone)
	defer cancel2()
	time.Sleep(50 * time.Millisecond) // let the watcher start on the parent
	noms := filepath.Join(dir, "embeddeddolt", "rt", ".dolt", "noms")
	is.NoErr(os.MkdirAll(noms, 0o755))
	is.NoErr(os.WriteFile(filepath.Join(noms, "manifest"), []byte("v1:new"), 0o644))
	fp = <-ch
	is.True(fp != "absent" && fp[:6] != "error:") // woke on the re-created store
}

func TestWaitReturnsOnCancel(t *testing.T) {
	is := is.New(t)
	dir := fakeDolt(t)
	since, err := Fingerprint(dir)
	is.NoErr(err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = (&Waiter{Dir: dir}).Wait(ctx, since)
	is.Equal(err, context.Canceled)
}

func FuzzIgnored(f *testing.F) {
	for _, s := range []string{"last-touched", ".lock", "manifest", "a.tmp", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		w := &Waiter{Dir: "/x/.beads"}
		_ = w.relevant(filepath.Join("/x/.beads", name))
		_ = ignored(name)
	})
}

// TestFileSumNeverBlocks: a file of .beads/ swapped for a FIFO (or a link
// to /dev/zero) after Fingerprint listed it is refused at once, not read:
// the FIFO would block the read, /dev/zero never end.
func TestFileSumNeverBlocks(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	fifo, link := filepath.Join(dir, "journal.idx"), filepath.Join(dir, "manifest")
	must(t, syscall.Mkfifo(fifo, 0o644))
	must(t, os.Symlink("/dev/zero", link))
	done := make(chan error, 2)
	go func() {
		_, err := fileSum(fifo)
		done <- err
		_, err = fileSum(link)
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			is.True(errors.Is(err, atomicfile.ErrNotRegular))
		case <-time.After(20 * time.Second):
			t.Fatal("fileSum blocked")
		}
	}
	sum, err := Fingerprint(dir)
	is.NoErr(err)
	is.True(sum != "")
}
