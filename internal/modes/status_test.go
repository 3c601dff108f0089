package modes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSetStatusWritesAtomically: the status file carries this process's
// PID and every worker, parses back, and is written as the state's other
// files are (no temp file is left, and the mode is the state's 0600).
func TestSetStatusWritesAtomically(t *testing.T) {
	dir := t.TempDir()
	p := &Pool{PoolSetup: PoolSetup{StatusFile: filepath.Join(dir, "workers.json")}}
	p.setStatus(WorkerStatus{Worker: "w2", Actor: "ralphd/h/c/w2"})
	p.setStatus(WorkerStatus{Worker: "w1", Actor: "ralphd/h/c/w1", Worktree: "/s/worktrees/w1", Issue: "t-1", Attempt: 2})
	b, err := os.ReadFile(p.StatusFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseStatusFile(b)
	if err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	if f.PID != os.Getpid() || f.Version != StatusVersion {
		t.Errorf("pid %d version %d, want %d and %d", f.PID, f.Version, os.Getpid(), StatusVersion)
	}
	if len(f.Workers) != 2 || f.Workers[0].Worker != "w1" || f.Workers[0].Issue != "t-1" || f.Workers[0].Attempt != 2 ||
		f.Workers[1].Worker != "w2" || f.Workers[1].Issue != "" {
		t.Errorf("workers = %+v", f.Workers)
	}
	for _, w := range f.Workers {
		if time.Since(w.Since) > time.Minute || w.Since.After(time.Now()) {
			t.Errorf("%s since %v", w.Worker, w.Since)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "workers.json" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	fi, err := os.Stat(p.StatusFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestParseStatusFile(t *testing.T) {
	since := `"2026-11-23T20:00:00Z"`
	for _, tc := range []struct {
		name    string
		in      string
		workers int
		err     string
	}{
		{"two", `{"version":1,"pid":42,"workers":[{"worker":"w1","actor":"a","since":` + since + `},{"worker":"w2","actor":"b","issue":"t-1","attempt":1,"worktree":"/x","since":` + since + `}]}`, 2, ""},
		{"none", `{"version":1,"pid":42,"workers":[]}`, 0, ""},
		{"null workers", `{"version":1,"pid":42,"workers":null}`, 0, ""},
		{"unknown keys kept compatible", `{"version":1,"pid":42,"later":true,"workers":[]}`, 0, ""},
		{"empty", ``, 0, "EOF"},
		{"garbage", `not json at all`, 0, "invalid character"},
		{"old bare array", `[{"worker":"w1","since":` + since + `}]`, 0, "cannot unmarshal array"},
		{"truncated", `{"version":1,"pid":42,"workers":[{"worker":"w1"`, 0, "unexpected EOF"},
		{"two values", `{"version":1,"pid":42,"workers":[]} {}`, 0, "more than one"},
		{"other version", `{"version":2,"pid":42,"workers":[]}`, 0, "version 2"},
		{"no pid", `{"version":1,"workers":[]}`, 0, "pid 0"},
		{"negative pid", `{"version":1,"pid":-1,"workers":[]}`, 0, "pid -1"},
		{"unnamed worker", `{"version":1,"pid":42,"workers":[{"since":` + since + `}]}`, 0, "no name"},
		{"duplicate worker", `{"version":1,"pid":42,"workers":[{"worker":"w1","since":` + since + `},{"worker":"w1","since":` + since + `}]}`, 0, "twice"},
		{"negative attempt", `{"version":1,"pid":42,"workers":[{"worker":"w1","attempt":-3,"since":` + since + `}]}`, 0, "attempt -3"},
		{"no time", `{"version":1,"pid":42,"workers":[{"worker":"w1"}]}`, 0, "no time"},
		{"escape sequence", `{"version":1,"pid":42,"workers":[{"worker":"w1","issue":"\u001b[2J","since":` + since + `}]}`, 0, "control characters"},
		{"bidi override", `{"version":1,"pid":42,"workers":[{"worker":"w1","worktree":"/a\u202e/b","since":` + since + `}]}`, 0, "control characters"},
		{"escape in the queued issue", `{"version":1,"pid":42,"workers":[{"worker":"w1","queued":"\u001b]0;x\u0007","since":` + since + `}]}`, 0, "control characters"},
		{"wrong type", `{"version":1,"pid":"42","workers":[]}`, 0, "cannot unmarshal"},
		{"too many", `{"version":1,"pid":42,"workers":[` + strings.Repeat(`{},`, MaxStatusWorkers) + `{}]}`, 0, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseStatusFile([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Workers) != tc.workers || f.Workers == nil {
				t.Errorf("workers = %#v, want %d", f.Workers, tc.workers)
			}
		})
	}
}

// FuzzParseStatusFile: any bytes give a status or an error, never a
// panic, and a status it accepts holds only printable, named workers and
// encodes back to a file it accepts again.
func FuzzParseStatusFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"pid":42,"workers":[{"worker":"w1","actor":"a","issue":"t-1","attempt":2,"worktree":"/x","since":"2026-11-23T20:00:00Z"}]}`))
	f.Add([]byte(`{"version":1,"pid":42,"workers":[]}`))
	f.Add([]byte(`[{"worker":"w1"}]`))
	f.Add([]byte("{\"version\":1,\"pid\":1,\"workers\":[{\"worker\":\"\xff\",\"since\":\"2026-11-23T20:00:00Z\"}]}"))
	f.Add([]byte(`{"version":1,"pid":9223372036854775807,"workers":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseStatusFile(data)
		if err != nil {
			return
		}
		if got.PID <= 0 || got.Workers == nil || len(got.Workers) > MaxStatusWorkers {
			t.Fatalf("accepted %+v", got)
		}
		for _, w := range got.Workers {
			if w.Worker == "" || w.Attempt < 0 || w.Since.IsZero() {
				t.Fatalf("accepted worker %+v", w)
			}
			for _, s := range []string{w.Worker, w.Actor, w.Worktree, w.Issue} {
				if hasControl(s) {
					t.Fatalf("accepted control characters: %q", s)
				}
			}
		}
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseStatusFile(b)
		if err != nil || len(again.Workers) != len(got.Workers) || again.PID != got.PID {
			t.Fatalf("round trip: %v %+v", err, again)
		}
	})
}
