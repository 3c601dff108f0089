package modes

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/testkit/standin"
)

// TestSnapshotReadsCommentsBatched checks how a snapshot reads comments:
// every full reading is one `bd export`, every comment afresh, and no
// list (listEverything); where batches are cheaper (a few issues of a big
// tracker), the commented issues go in one `bd show --include-comments`,
// or one `bd comments` per issue when that call fails; and a reading of
// what changed reads them again only for an issue whose comment count
// moved.
func TestSnapshotReadsCommentsBatched(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		refuseShow             bool
		wantShows, wantPerItem int
	}{
		{"one batched show", false, 1, 0},
		{"show refused: one comments call per issue", true, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			a, b, c := p.create("A"), p.create("B"), p.create("C")
			sh(t, p.repo, p.bd, "comments", "add", a, "first on A")
			sh(t, p.repo, p.bd, "comments", "add", c, "first on C")
			sh(t, p.repo, p.bd, "comments", "add", c, "second on C")
			// A bd that logs its subcommand, and refuses show if asked.
			refuse := ""
			if tc.refuseShow {
				refuse = `[ "$1" = show ] && { echo 'Error: refused' >&2; exit 1; }`
			}
			wrapper, log := loggingBD(t, p.bd, refuse)
			l := &Loop{Deps: Deps{Dir: p.repo, BD: &beads.Client{Bin: wrapper, Dir: p.repo, Timeout: time.Minute}}}
			ctx := context.Background()
			want := map[string][]string{a: {"first on A"}, b: nil, c: {"first on C", "second on C"}}
			check := func(what string, snap map[string]beads.Issue) {
				t.Helper()
				for id, want := range want {
					var got []string
					for _, cm := range snap[id].Comments {
						got = append(got, cm.Text)
					}
					if strings.Join(got, "|") != strings.Join(want, "|") {
						t.Errorf("%s: %s's comments: %q, want %q", what, id, got, want)
					}
				}
			}
			snap, err := l.snapshotFresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			check("first snapshot", snap)
			if exports, shows, perItem := countCalls(t, log); exports != 1 || shows+perItem != 0 || callsOf(t, log, "list") != 0 {
				t.Fatalf("first snapshot of 3 issues: %d export, %d show, %d comments and %d list calls, want one export", exports, shows, perItem, callsOf(t, log, "list"))
			}

			// The same issues as part of a big tracker: batches.
			os.Remove(log)
			issues, err := l.BD.List(ctx, beads.ListOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.readComments(ctx, issues, 10000, map[string]cachedComments{}, false); err != nil {
				t.Fatal(err)
			}
			check("batches", guard.NewSnapshot(issues))
			if exports, shows, perItem := countCalls(t, log); exports != 0 || shows != tc.wantShows || perItem != tc.wantPerItem {
				t.Fatalf("batches: %d export, %d show and %d comments calls, want 0, %d and %d", exports, shows, perItem, tc.wantShows, tc.wantPerItem)
			}

			// Full readings (every reading of a tracker this small): one
			// export each, every comment afresh, nothing moved or not, and
			// no list.
			os.Remove(log)
			if _, err := l.snapshotFresh(ctx); err != nil {
				t.Fatal(err)
			}
			if exports, shows, perItem := countCalls(t, log); exports != 1 || shows+perItem != 0 || callsOf(t, log, "list") != 0 {
				t.Fatalf("unchanged tracker: %d export, %d show, %d comments and %d list calls, want one export", exports, shows, perItem, callsOf(t, log, "list"))
			}

			// Readings of what changed: nothing moved, no comments read;
			// A's update time moved, its count not, none; one comment
			// more on A: A's comments alone are read again.
			l.tracker = newTrackerReads(TrackerReadsIncremental, 20, 0)
			if _, err := l.snapshotFresh(ctx); err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				what   string
				change []string
				reads  bool
			}{
				{"unchanged tracker", nil, false},
				{"A updated, its comments not", []string{"update", a, "--notes", "a note"}, false},
				{"one comment added to A", []string{"comments", "add", a, "second on A"}, true},
			} {
				if step.change != nil {
					sh(t, p.repo, append([]string{p.bd}, step.change...)...)
				}
				os.Remove(log)
				snap, err := l.snapshotFresh(ctx)
				if err != nil {
					t.Fatal(err)
				}
				exports, shows, perItem := countCalls(t, log)
				if got := exports+shows+perItem > 0; got != step.reads || exports != 0 || perItem > 1 {
					t.Fatalf("%s: %d export, %d show and %d comments calls, want comments read: %v (A's alone)", step.what, exports, shows, perItem, step.reads)
				}
				if step.reads && len(snap[a].Comments) != 2 {
					t.Fatalf("A has %d comments after a second, want 2", len(snap[a].Comments))
				}
			}
			// A full reading of an incremental run reads every comment
			// afresh, nothing moved or not: one export.
			os.Remove(log)
			if _, err := l.snapshotFull(ctx); err != nil {
				t.Fatal(err)
			}
			if exports, shows, perItem := countCalls(t, log); exports != 1 || shows+perItem != 0 {
				t.Fatalf("an incremental run's full reading: %d export, %d show and %d comments calls, want one export", exports, shows, perItem)
			}
		})
	}
}

// loggingBD writes, in a directory of its own, a bd that appends its
// subcommand (its first argument) to log, one call a line, runs first
// (shell lines: a refusal, a made-up answer; "" for none), then runs the
// stand-in bd.
func loggingBD(t *testing.T, bd, first string) (bin, log string) {
	t.Helper()
	dir := t.TempDir()
	bin, log = filepath.Join(dir, "bd"), filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$1\" >> " + log + "\n" + first + "\nexec " + bd + ` "$@"` + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// callsOf counts the calls of subcommand sub a loggingBD logged.
func callsOf(t *testing.T, log, sub string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if line == sub {
			n++
		}
	}
	return n
}

// countCalls counts the export, show and comments calls the logging bd
// saw.
func countCalls(t *testing.T, log string) (exports, shows, comments int) {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, l := range strings.Fields(string(b)) {
		switch l {
		case "export":
			exports++
		case "show":
			shows++
		case "comments":
			comments++
		}
	}
	return exports, shows, comments
}

// TestSnapshotReadsManyCommentsFromExport: a snapshot that must read the
// comments of enough issues for an export to be cheaper (exportWorth: a
// run's first, on a big tracker) reads them from one `bd export`, not in batches of `bd show
// --include-comments`; and what it reads is what the batches read. When
// the export fails, the batches read them all.
func TestSnapshotReadsManyCommentsFromExport(t *testing.T) {
	p := newProject(t)
	if _, err := standin.Seed(p.repo, standin.Mix{Issues: 3000, Open: 100, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	read := func(refuseExport bool) (guard.Snapshot, string) {
		refuse := ""
		if refuseExport {
			refuse = `[ "$1" = export ] && { echo 'Error: refused' >&2; exit 1; }`
		}
		wrapper, log := loggingBD(t, p.bd, refuse)
		l := &Loop{Deps: Deps{Dir: p.repo, BD: &beads.Client{Bin: wrapper, Dir: p.repo, Timeout: time.Minute}}}
		snap, err := l.snapshotFresh(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		return snap, strings.Join(strings.Fields(string(b)), " ")
	}
	viaExport, calls := read(false)
	if strings.Count(calls, "export") != 1 || strings.Contains(calls, "show") || strings.Contains(calls, "comments") {
		t.Fatalf("bd calls %q: want one export, no show or comments", calls)
	}
	viaBatches, calls := read(true)
	if shows := strings.Count(calls, "show"); shows < 2 {
		t.Fatalf("bd calls %q: want the batches of show after the refused export", calls)
	}
	commented := 0
	for id, is := range viaBatches {
		if len(is.Comments) > 0 {
			commented++
		}
		if !reflect.DeepEqual(is.Comments, viaExport[id].Comments) {
			t.Fatalf("%s: comments from the export %+v, from the batches %+v", id, viaExport[id].Comments, is.Comments)
		}
	}
	if !exportWorth(commented, len(viaBatches)) || len(viaExport) != len(viaBatches) {
		t.Fatalf("%d commented issues, %d and %d issues: want an export worth it, the same issues", commented, len(viaExport), len(viaBatches))
	}
}

// TestExportWorth: one `bd export` reads comments rather than batches of
// `bd show --include-comments` from about one stale issue in 200 of the
// tracker's, never for a single issue.
func TestExportWorth(t *testing.T) {
	for _, tc := range []struct {
		stale, size int
		want        bool
	}{
		{0, 50, false},
		{1, 50, false}, // one issue: a show costs what the export does
		{2, 50, true},
		{1, 1, false},
		{24, 5000, false},
		{25, 5000, true},
		{400, 5000, true},
		{2, 5000, false},
		{250, 50000, true},
		{249, 50000, false},
	} {
		if got := exportWorth(tc.stale, tc.size); got != tc.want {
			t.Errorf("exportWorth(%d, %d) = %v, want %v", tc.stale, tc.size, got, tc.want)
		}
	}
}
