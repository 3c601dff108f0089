package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testPlanner = "ralphd/box/a1b2c3/planner"

// TestFleetStatusShown: the daemon holding the lock writes who plans, and
// `ralphd status` (ReadStatus, text and JSON) and Store.Fleet show it:
// this daemon, another one, or nobody; never a file once its daemon has
// stopped.
func TestFleetStatusShown(t *testing.T) {
	s := openStore(t)
	root := filepath.Dir(filepath.Dir(s.Dir()))
	lock, err := s.Lock("daemon")
	if err != nil {
		t.Fatal(err)
	}
	since := fixedNow().Add(time.Minute)
	for _, tc := range []struct {
		name, planner string
		this          bool
		text          []string
	}{
		{"this daemon", testPlanner, true, []string{"this ralphd (clone a1b2c3 on host box) plans, holding lease t-9 since"}},
		{"another", "ralphd/other/ffeedd/planner", false, []string{"another ralphd plans: clone ffeedd on host other, seen holding lease t-9 since"}},
		{"a foreign actor", "mallory", false, []string{"another ralphd plans: mallory"}},
		{"nobody", "", false, []string{"nobody plans (lease t-9 free since"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.WriteFleet(testPlanner, "t-9", tc.planner, since); err != nil {
				t.Fatal(err)
			}
			st, err := ReadStatus(root, s.Identity(), 3)
			if err != nil {
				t.Fatal(err)
			}
			if st.Fleet == nil {
				t.Fatalf("no fleet in status; warnings %q", st.Warnings)
			}
			if st.Fleet.Planner != tc.planner || st.Fleet.ThisClone != tc.this || st.Fleet.Lease != "t-9" || !st.Fleet.Since.Equal(since) {
				t.Fatalf("fleet %+v", *st.Fleet)
			}
			out := statusText(t, st)
			for _, want := range tc.text {
				if !strings.Contains(out, "Fleet       "+want) {
					t.Errorf("status lacks %q", want)
				}
			}
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{`"fleet":{"lease":"t-9"`, `"planner_host":`, `"planner_clone":`, `"this_clone":`, `"since":`} {
				if !strings.Contains(string(b), key) {
					t.Errorf("status JSON lacks %s: %s", key, b)
				}
			}
			f, note := s.Fleet()
			if f == nil || note != "" || *f != *st.Fleet {
				t.Fatalf("Store.Fleet %+v %q, want %+v", f, note, *st.Fleet)
			}
		})
	}

	// The daemon stopped without removing its file (SIGKILL): not shown.
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(root, s.Identity(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if st.Fleet != nil || !strings.Contains(strings.Join(st.Warnings, "\n"), "no longer running") {
		t.Fatalf("fleet %+v after the daemon stopped; warnings %q", st.Fleet, st.Warnings)
	}
	b, _ := json.Marshal(st)
	if !strings.Contains(string(b), `"fleet":null`) {
		t.Fatalf("status JSON: %s", b)
	}
	// Cleared: nothing, and no warning.
	if err := s.ClearFleet(); err != nil {
		t.Fatal(err)
	}
	if err := s.ClearFleet(); err != nil {
		t.Fatalf("clearing a missing file: %v", err)
	}
	st, _ = ReadStatus(root, s.Identity(), 3)
	if st.Fleet != nil || len(st.Warnings) != 0 {
		t.Fatalf("fleet %+v, warnings %q", st.Fleet, st.Warnings)
	}
}

// TestFleetStatusRefusesForgeries: a fleet file someone else wrote (an
// agent running as the user) is not shown as who plans: another PID, one
// from before the lock was taken, control characters, or not ralphd's
// format. It becomes a warning, never terminal escapes in the output.
func TestFleetStatusRefusesForgeries(t *testing.T) {
	s := openStore(t)
	root := filepath.Dir(filepath.Dir(s.Dir()))
	if _, err := s.Lock("daemon"); err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	at := fixedNow().Add(time.Minute).Format(time.RFC3339)
	for _, tc := range []struct{ name, body string }{
		{"another pid", `{"version":1,"pid":1,"self":"x","lease":"t-1","planner":"x","since":"` + at + `"}`},
		{"before the lock", `{"version":1,"pid":PID,"self":"x","lease":"t-1","planner":"x","since":"2020-01-01T00:00:00Z"}`},
		{"escape in the planner", `{"version":1,"pid":PID,"self":"x","lease":"t-1","planner":"\u001b[2Jx","since":"` + at + `"}`},
		{"bidi in the lease", `{"version":1,"pid":PID,"self":"x","lease":"t-1\u202e","planner":"","since":"` + at + `"}`},
		{"another version", `{"version":2,"pid":PID,"self":"x","lease":"t-1","planner":"","since":"` + at + `"}`},
		{"no lease", `{"version":1,"pid":PID,"self":"x","planner":"","since":"` + at + `"}`},
		{"no time", `{"version":1,"pid":PID,"self":"x","lease":"t-1","planner":""}`},
		{"not json", `[]`},
		{"huge actor", `{"version":1,"pid":PID,"self":"x","lease":"t-1","planner":"` + strings.Repeat("a", 600) + `","since":"` + at + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, filepath.Join(s.Dir(), FleetFile), strings.ReplaceAll(tc.body, "PID", itoa(pid)))
			st, err := ReadStatus(root, s.Identity(), 3)
			if err != nil {
				t.Fatal(err)
			}
			if st.Fleet != nil || len(st.Warnings) == 0 {
				t.Fatalf("fleet %+v shown; warnings %q", st.Fleet, st.Warnings)
			}
			if f, _ := s.Fleet(); f != nil {
				t.Fatalf("Store.Fleet shows %+v", f)
			}
			if out := statusText(t, st); strings.ContainsAny(out, "\x1b\u202e") {
				t.Fatalf("status prints the forged bytes: %q", out)
			}
		})
	}
	// A link in the file's place is not followed.
	if err := os.Remove(filepath.Join(s.Dir(), FleetFile)); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	writeFile(t, target, `{"version":1,"pid":`+itoa(pid)+`,"self":"x","lease":"t-1","planner":"x","since":"`+at+`"}`)
	if err := os.Symlink(target, filepath.Join(s.Dir(), FleetFile)); err != nil {
		t.Fatal(err)
	}
	if st, _ := ReadStatus(root, s.Identity(), 3); st.Fleet != nil {
		t.Fatalf("a symlinked fleet file is shown: %+v", st.Fleet)
	}
	// ralphd's own write replaces the link, never writing through it.
	if err := s.WriteFleet("x", "t-1", "", fixedNow().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if readFile(t, target) == "" || strings.Contains(readFile(t, target), `"planner": ""`) {
		t.Fatal("WriteFleet wrote through a symlink")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// FuzzParseFleetFile: any bytes give a fleet status or an error, never a
// panic; what parses has no control characters and encodes back to a
// file that parses the same.
func FuzzParseFleetFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"pid":7,"self":"ralphd/h/c/planner","lease":"t-1","planner":"ralphd/h/c/planner","since":"2026-01-02T15:04:05Z"}`))
	f.Add([]byte(`{"version":1,"pid":7,"lease":"t-1","planner":"\u001b","since":"2026-01-02T15:04:05Z"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseFleetFile(data)
		if err != nil {
			return
		}
		if got.PID <= 0 || got.Lease == "" || got.Since.IsZero() {
			t.Fatalf("accepted %+v", got)
		}
		for _, s := range []string{got.Self, got.Lease, got.Planner} {
			if strings.ContainsAny(s, "\x00\x1b\n\r") {
				t.Fatalf("accepted control characters: %q", s)
			}
		}
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseFleetFile(b)
		if err != nil || again != got {
			t.Fatalf("round trip: %+v %v, want %+v", again, err, got)
		}
	})
}
