package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// bd runs the stand-in in dir with the sandbox environment.
func (s *scratch) bd(dir string, args ...string) result {
	s.t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := s.runner.Main(ctx, args, strings.NewReader(""), &out, &errb, s.baseEnv, dir)
	return result{out.String(), errb.String(), code}
}

// initRepo makes a sandbox whose repo is initialised with prefix rt and
// uses the real clock.
func initRepo(t testing.TB) *scratch {
	t.Helper()
	s := newScratch(t)
	s.runner = Runner{}
	if r := s.bd(s.repo, "init", "--prefix", "rt", "--non-interactive", "--quiet"); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	return s
}

// createID creates an issue and returns its id.
func (s *scratch) createID(args ...string) string {
	s.t.Helper()
	r := s.bd(s.repo, append([]string{"create", "--json"}, args...)...)
	if r.code != 0 {
		s.t.Fatalf("create %v: %+v", args, r)
	}
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		s.t.Fatalf("create output: %v\n%s", err, r.stdout)
	}
	return v.ID
}

type fileState struct {
	data  []byte
	mtime time.Time
}

func snapshot(t *testing.T, paths ...string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		out[p] = fileState{b, st.ModTime()}
	}
	return out
}

func age(t *testing.T, paths ...string) {
	t.Helper()
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range paths {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatalf("chtimes %s: %v", p, err)
		}
	}
}

// TestReadsTouchWritesChange checks the file behaviour ralphd's daemon
// watcher relies on: reads rewrite the Dolt files with identical bytes
// (mtime changes), show also rewrites last-touched, and only writes
// change the manifest's bytes and grow the journal.
func TestReadsTouchWritesChange(t *testing.T) {
	s := initRepo(t)
	id := s.createID("First issue")
	ws := &workspace{beadsDir: filepath.Join(s.repo, ".beads"), dbName: "rt"}
	dolt := []string{ws.manifestPath(), ws.journalIdxPath(), ws.journalPath()}
	lastTouched := filepath.Join(ws.beadsDir, "last-touched")

	reads := []struct {
		args        []string
		touchesLast bool
	}{
		{[]string{"ready", "--json"}, false},
		{[]string{"list", "--json"}, false},
		{[]string{"blocked", "--json"}, false},
		{[]string{"stats", "--json"}, false},
		{[]string{"show", id, "--json"}, true},
	}
	for _, rd := range reads {
		t.Run(strings.Join(rd.args, " "), func(t *testing.T) {
			is := is.New(t)
			all := append(append([]string{}, dolt...), lastTouched)
			age(t, all...)
			before := snapshot(t, all...)
			r := s.bd(s.repo, rd.args...)
			is.Equal(r.code, 0)
			after := snapshot(t, all...)
			for _, p := range dolt {
				is.True(bytes.Equal(before[p].data, after[p].data)) // a read keeps the content
				is.True(after[p].mtime.After(before[p].mtime))      // a read rewrites the file
			}
			is.True(bytes.Equal(before[lastTouched].data, after[lastTouched].data))
			is.Equal(after[lastTouched].mtime.After(before[lastTouched].mtime), rd.touchesLast) // only show rewrites last-touched
		})
	}

	writes := [][]string{
		{"create", "Second issue"},
		{"update", id, "--status", "in_progress"},
		{"update", id, "--priority", "1"},
		{"close", id, "--reason", "done"},
		{"label", "add", id, "x"},
		{"comments", "add", id, "hello"},
	}
	for _, args := range writes {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			is := is.New(t)
			before := snapshot(t, dolt...)
			r := s.bd(s.repo, args...)
			is.Equal(r.code, 0)
			after := snapshot(t, dolt...)
			is.True(!bytes.Equal(before[ws.manifestPath()].data, after[ws.manifestPath()].data)) // the root hash changes
			is.True(len(after[ws.journalPath()].data) > len(before[ws.journalPath()].data))      // the journal grows
			is.True(len(after[ws.journalIdxPath()].data) > len(before[ws.journalIdxPath()].data))
		})
	}

	t.Run("interactions", func(t *testing.T) {
		is := is.New(t)
		b, err := os.ReadFile(filepath.Join(ws.beadsDir, "interactions.jsonl"))
		is.NoErr(err)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		is.Equal(len(lines), 3) // status change, priority change, close
		var fields []string
		for _, l := range lines {
			var e struct {
				Kind    string
				IssueID string                           `json:"issue_id"`
				Extra   struct{ Field, NewValue string } `json:"extra"`
			}
			is.NoErr(json.Unmarshal([]byte(l), &e))
			is.Equal(e.Kind, "field_change")
			is.Equal(e.IssueID, id)
			fields = append(fields, e.Extra.Field)
		}
		is.Equal(strings.Join(fields, ","), "status,priority,status")
	})
}

// TestLayout checks init writes the embedded-Dolt-shaped tree.
func TestLayout(t *testing.T) {
	is := is.New(t)
	s := initRepo(t)
	for _, p := range []string{
		".beads/metadata.json", ".beads/config.yaml", ".beads/.local_version", ".beads/interactions.jsonl",
		".beads/embeddeddolt/.lock", ".beads/embeddeddolt/rt/.dolt/noms/manifest",
		".beads/embeddeddolt/rt/.dolt/noms/journal.idx", ".beads/embeddeddolt/rt/.dolt/noms/" + journalName,
	} {
		_, err := os.Stat(filepath.Join(s.repo, p))
		is.NoErr(err) // init writes this file
	}
	manifest, err := os.ReadFile(filepath.Join(s.repo, ".beads/embeddeddolt/rt/.dolt/noms/manifest"))
	is.NoErr(err)
	is.True(strings.HasPrefix(string(manifest), "5:__DOLT__:"))
	r := s.bd(s.repo, "init", "--prefix", "rt")
	is.Equal(r.code, 1) // a second init refuses
}
