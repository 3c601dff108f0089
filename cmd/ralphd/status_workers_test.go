package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/modes"
	"github.com/ralphd/ralphd/internal/state"
)

func TestLiveWorkers(t *testing.T) {
	now := time.Date(2026, 11, 23, 20, 0, 30, 0, time.UTC)
	started := now.Add(-time.Minute)
	file := func(pid int, since time.Time) string {
		return `{"version":1,"pid":` + itoa(pid) + `,"workers":[
			{"worker":"w1","actor":"ralphd/h/abc/w1","worktree":"/s/worktrees/w1","issue":"t-1","attempt":2,"since":"` + since.Format(time.RFC3339Nano) + `"},
			{"worker":"w2","actor":"ralphd/h/abc/w2","since":"` + since.Format(time.RFC3339Nano) + `"}]}`
	}
	holder := &state.LockInfo{PID: 4242, Mode: "build", Since: started}
	for _, tc := range []struct {
		name string
		file string // "" for no file
		lock *state.LockInfo
		live int
		note string
	}{
		{"no file", "", holder, 0, ""},
		{"live", file(4242, now.Add(-10*time.Second)), holder, 2, ""},
		{"killed: nobody holds the lock", file(4242, now.Add(-10*time.Second)), nil, 0, "left by a ralphd (PID 4242) that is no longer running"},
		{"killed: another ralphd holds the lock", file(777, now.Add(-10*time.Second)), holder, 0, "(PID 777) that is no longer running"},
		{"killed: its PID recycled by the holder", file(4242, started.Add(-time.Hour)), holder, 0, "no longer running"},
		{"holder has not written its details", file(4242, now), &state.LockInfo{}, 0, "no longer running"},
		{"garbage", "\x00\x01garbage", holder, 0, "is not a worker status ralphd wrote"},
		{"truncated", file(4242, now)[:40], holder, 0, "is not a worker status ralphd wrote"},
		{"old format", `[{"worker":"w1","since":"2026-11-23T20:00:00Z"}]`, holder, 0, "is not a worker status ralphd wrote"},
		{"terminal escapes", strings.Replace(file(4242, now), "t-1", `\u001b]0;pwned\u0007`, 1), holder, 0, "is not a worker status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "workers.json")
			if tc.file != "" {
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			live, note := liveWorkers(path, tc.lock, now)
			if live == nil || len(live) != tc.live {
				t.Fatalf("live = %#v, want %d workers", live, tc.live)
			}
			if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("note = %q, want %q", note, tc.note)
			}
			if tc.live > 0 {
				w := live[0]
				if w.Worker != "w1" || w.Issue != "t-1" || w.Attempt != 2 || w.Worktree != "/s/worktrees/w1" || w.ElapsedSeconds != 10 {
					t.Errorf("w1 = %+v", w)
				}
			}
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		path := t.TempDir() // a directory: reading it fails
		live, note := liveWorkers(path, holder, now)
		if len(live) != 0 || !strings.Contains(note, "could not be read") {
			t.Errorf("live %v, note %q", live, note)
		}
	})
	t.Run("not a regular file: a FIFO would block, a symlink is not ralphd's", func(t *testing.T) {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip(err)
		}
		good := filepath.Join(dir, "good.json")
		if err := os.WriteFile(good, []byte(file(4242, now)), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{fifo, good, "/dev/zero"} {
			path := filepath.Join(t.TempDir(), "workers.json")
			if target == fifo {
				path = fifo
			} else if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var live []workerJSON
			var note string
			go func() { live, note = liveWorkers(path, holder, now); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: status hangs", target)
			}
			if len(live) != 0 || !strings.Contains(note, "not a regular file") {
				t.Errorf("%s: live %v, note %q", target, live, note)
			}
		}
	})
	t.Run("too large", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "workers.json")
		big := `{"version":1,"pid":4242,"workers":[],"pad":"` + strings.Repeat("x", maxStatusSize) + `"}`
		if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
			t.Fatal(err)
		}
		live, note := liveWorkers(path, holder, now)
		if len(live) != 0 || !strings.Contains(note, "too large") {
			t.Errorf("live %v, note %q", live, note)
		}
	})
	t.Run("a time in the future is no negative elapsed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "workers.json")
		if err := os.WriteFile(path, []byte(file(4242, now.Add(time.Hour))), 0o600); err != nil {
			t.Fatal(err)
		}
		live, _ := liveWorkers(path, holder, now)
		if len(live) != 2 || live[0].ElapsedSeconds != 0 {
			t.Errorf("live = %+v", live)
		}
	})
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestStatusJSONWorkers parses `ralphd status --json`'s object as a
// script would: the state's keys, and "workers" ([] when none, never
// null) with the documented keys of each worker.
func TestStatusJSONWorkers(t *testing.T) {
	since := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		workers []workerJSON
		want    string
	}{
		{"none", []workerJSON{}, `[]`},
		{"idle and busy", []workerJSON{
			{Worker: "w1", Actor: "a1", Worktree: "/w1", Issue: "t-1", Attempt: 1, Since: since, ElapsedSeconds: 5},
			{Worker: "w2", Actor: "a2", Since: since},
		}, `[{"worker":"w1","actor":"a1","worktree":"/w1","issue":"t-1","attempt":1,"since":"2026-11-23T20:00:00Z","elapsed_seconds":5,"queued":""},` +
			`{"worker":"w2","actor":"a2","worktree":"","issue":"","attempt":0,"since":"2026-11-23T20:00:00Z","elapsed_seconds":0,"queued":""}]`},
		{"work in the merge queue", []workerJSON{
			{Worker: "w1", Actor: "a1", Worktree: "/w1", Issue: "t-2", Attempt: 1, Since: since, ElapsedSeconds: 5, Queued: "t-1"},
		}, `[{"worker":"w1","actor":"a1","worktree":"/w1","issue":"t-2","attempt":1,"since":"2026-11-23T20:00:00Z","elapsed_seconds":5,"queued":"t-1"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := state.ReadStatus(t.TempDir(), state.Identity{ID: "abc"}, 3)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(statusJSON{Status: st, Workers: tc.workers})
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"version", "project", "lock", "attempts", "warnings", "workers"} {
				if _, ok := m[k]; !ok {
					t.Errorf("no %q in %s", k, b)
				}
			}
			var got bytes.Buffer
			if err := json.Compact(&got, m["workers"]); err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("workers = %s\nwant      %s", got.String(), tc.want)
			}
			var back []map[string]any
			if err := json.Unmarshal(m["workers"], &back); err != nil {
				t.Fatal(err)
			}
			for _, w := range back {
				keys := make([]string, 0, len(w))
				for k := range w {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				if !slices.Equal(keys, []string{"actor", "attempt", "elapsed_seconds", "issue", "queued", "since", "worker", "worktree"}) {
					t.Errorf("worker keys = %v", keys)
				}
			}
		})
	}
}

// FuzzLiveWorkers: whatever the status file holds, status shows live
// workers or a note, never panics, and never shows a worker with a name
// missing or a negative elapsed time.
func FuzzLiveWorkers(f *testing.F) {
	f.Add([]byte(`{"version":1,"pid":4242,"workers":[{"worker":"w1","since":"2026-11-23T20:00:00Z"}]}`), 4242)
	f.Add([]byte(`{"version":1,"pid":4242,"workers":[{"worker":"w1","since":"2126-11-23T20:00:00Z"}]}`), 4242)
	f.Add([]byte(`[]`), 0)
	f.Add([]byte{}, 1)
	f.Fuzz(func(t *testing.T, data []byte, pid int) {
		path := filepath.Join(t.TempDir(), "workers.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		lock := &state.LockInfo{PID: pid, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		live, note := liveWorkers(path, lock, time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC))
		if live == nil || (len(live) > 0 && note != "") {
			t.Fatalf("live %v, note %q", live, note)
		}
		if len(live) == 0 && note == "" {
			// Silence only for a live pool with no workers.
			if f, err := modes.ParseStatusFile(data); err != nil || len(f.Workers) != 0 {
				t.Fatalf("nothing said about %q", data)
			}
		}
		for _, w := range live {
			if w.Worker == "" || w.ElapsedSeconds < 0 {
				t.Fatalf("shown: %+v", w)
			}
		}
		var buf bytes.Buffer
		writeWorkers(&buf, live)
	})
}
