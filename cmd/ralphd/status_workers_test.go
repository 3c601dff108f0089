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
	f.Add([]byte(`{"version":1,"pid":4242,"workers":[],"reviews":[{"issue":"t-a","branch":"ralph/t-a","pr":3,"state":"checks failing","since":"2026-11-23T20:00:00Z"}]}`), 4242)
	f.Add([]byte(`{"version":1,"pid":4242,"workers":[],"reviews":[{"issue":"t-a","pr":-1,"state":"hacked\u001b[2J","since":"2026-11-23T20:00:00Z"}]}`), 4242)
	f.Add([]byte(`[]`), 0)
	f.Add([]byte{}, 1)
	f.Fuzz(func(t *testing.T, data []byte, pid int) {
		path := filepath.Join(t.TempDir(), "workers.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		lock := &state.LockInfo{PID: pid, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		live, prs, note := liveStatus(path, lock, time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC))
		if live == nil || prs == nil || (len(live)+len(prs) > 0 && note != "") {
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
		for _, p := range prs {
			if p.Issue == "" || p.ElapsedSeconds < 0 || p.Number < 0 {
				t.Fatalf("shown: %+v", p)
			}
		}
		var buf bytes.Buffer
		writeWorkers(&buf, live)
		writePullRequests(&buf, prs)
	})
}

// TestLivePullRequests: status lists the pull requests of the running
// pool with their state, in text and JSON; a file whose pull requests are
// not ralphd's (an unknown state, escapes) shows nothing but a note.
func TestLivePullRequests(t *testing.T) {
	now := time.Date(2026, 11, 23, 20, 0, 30, 0, time.UTC)
	holder := &state.LockInfo{PID: 4242, Mode: "build", Since: now.Add(-time.Hour)}
	pr := func(issue string, n int, st string) string {
		return `{"issue":"` + issue + `","branch":"ralph/` + issue + `","commit":"0123456789abcdef0123","pr":` + itoa(n) +
			`,"url":"https://github.com/o/r/pull/` + itoa(n) + `","state":"` + st + `","since":"2026-11-23T20:00:00Z"}`
	}
	file := func(prs ...string) string {
		return `{"version":1,"pid":4242,"workers":[{"worker":"w1","since":"2026-11-23T19:30:00Z"}],"reviews":[` + strings.Join(prs, ",") + `]}`
	}
	for _, tc := range []struct {
		name, file string
		text       []string // lines status prints; nil: no pull requests
		note       string
	}{
		{"none", file(), nil, ""},
		{"every state", file(pr("t-1", 0, "opening"), pr("t-2", 2, "waiting for review"), pr("t-3", 3, "checks failing"),
			pr("t-4", 4, "changes requested"), pr("t-5", 5, "merged"), pr("t-6", 6, "closed")), []string{
			"Pull requests: 6",
			"  t-1 (not opened yet) opening, pushed 30s ago  ralph/t-1 https://github.com/o/r/pull/0",
			"  t-2 #2 waiting for review, pushed 30s ago  ralph/t-2 https://github.com/o/r/pull/2",
			"  t-3 #3 checks failing, pushed 30s ago  ralph/t-3 https://github.com/o/r/pull/3",
			"  t-4 #4 changes requested, pushed 30s ago  ralph/t-4 https://github.com/o/r/pull/4",
			"  t-5 #5 merged, pushed 30s ago  ralph/t-5 https://github.com/o/r/pull/5",
			"  t-6 #6 closed, pushed 30s ago  ralph/t-6 https://github.com/o/r/pull/6",
		}, ""},
		{"unknown state", file(pr("t-1", 1, "approved by the agent")), nil, "is not a worker status"},
		{"escapes", file(pr(`t-1\u001b[2J`, 1, "merged")), nil, "is not a worker status"},
		{"no time", strings.Replace(file(pr("t-1", 1, "merged")), `"since":"2026-11-23T20:00:00Z"}]`, `"since":"0001-01-01T00:00:00Z"}]`, 1), nil, "is not a worker status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "workers.json")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, prs, note := liveStatus(path, holder, now)
			if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("note = %q, want %q", note, tc.note)
			}
			var buf bytes.Buffer
			writePullRequests(&buf, prs)
			want := ""
			if tc.text != nil {
				want = strings.Join(tc.text, "\n") + "\n"
			}
			if buf.String() != want {
				t.Errorf("text:\n%s\nwant:\n%s", buf.String(), want)
			}
			b, err := json.Marshal(statusJSON{Workers: []workerJSON{}, PullRequests: prs})
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				PullRequests []map[string]any `json:"pull_requests"`
			}
			if err := json.Unmarshal(b, &back); err != nil || back.PullRequests == nil {
				t.Fatalf("pull_requests in %s: %v", b, err)
			}
			if len(back.PullRequests) != len(tc.text)-min(len(tc.text), 1) {
				t.Errorf("%d pull requests in the JSON, want %d", len(back.PullRequests), len(tc.text)-1)
			}
			for _, p := range back.PullRequests {
				for _, k := range []string{"issue", "number", "url", "branch", "commit", "state", "since", "elapsed_seconds"} {
					if _, ok := p[k]; !ok {
						t.Errorf("no %q in %v", k, p)
					}
				}
			}
		})
	}
}

// liveWorkers is liveStatus without the pull requests.
func liveWorkers(path string, lock *state.LockInfo, now time.Time) ([]workerJSON, string) {
	live, _, note := liveStatus(path, lock, now)
	return live, note
}
