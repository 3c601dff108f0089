package beads_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

// fakeBD is a Client wired to the replaying fake bd.
type fakeBD struct {
	*beads.Client
	state string
}

// newFake returns a Client whose bd replays the named fixtures, one per
// call, the last one repeating.
func newFake(t *testing.T, fixtures ...string) *fakeBD {
	t.Helper()
	bin, state := replayBD(t, fixtures...)
	return &fakeBD{Client: &beads.Client{Bin: bin, Dir: t.TempDir()}, state: state}
}

// calls returns the invocations the fake recorded.
func (f *fakeBD) calls(t *testing.T) []fakeCall {
	t.Helper()
	return readCalls(t, f.state)
}

// args returns the argv of the only recorded call.
func (f *fakeBD) args(t *testing.T) []string {
	t.Helper()
	calls := f.calls(t)
	if len(calls) != 1 {
		t.Fatalf("want 1 bd call, got %d", len(calls))
	}
	return calls[0].Args
}

func intp(n int) *int           { return &n }
func argv(s ...string) []string { return s }

func TestClientOperations(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		fixture  string
		run      func(c *beads.Client) ([]beads.Issue, error)
		wantArgs []string
		wantIDs  []string
	}{
		{
			name:    "ready returns all ready work",
			fixture: "ready-mixed",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return c.Ready(ctx, beads.ReadyOptions{})
			},
			wantArgs: argv("ready", "--limit", "0", "--json"),
			wantIDs:  readyMixed,
		},
		{
			name:    "ready scoped to an epic with a limit",
			fixture: "ready-limit-2",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return c.Ready(ctx, beads.ReadyOptions{Parent: "rt-wjd", Limit: 2})
			},
			wantArgs: argv("ready", "--limit", "2", "--parent", "rt-wjd", "--json"),
			wantIDs:  []string{"rt-chn", "rt-wjd"},
		},
		{
			name:    "show",
			fixture: "show-blocked-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				i, err := c.Show(ctx, "rt-2j9")
				return []beads.Issue{i}, err
			},
			wantArgs: argv("show", "rt-2j9", "--json"),
			wantIDs:  []string{"rt-2j9"},
		},
		{
			name:    "show many",
			fixture: "show-multi-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return c.ShowMany(ctx, "rt-cjz", "rt-chn")
			},
			wantArgs: argv("show", "rt-cjz", "rt-chn", "--json"),
			wantIDs:  []string{"rt-cjz", "rt-chn"},
		},
		{
			name:    "show with comments",
			fixture: "show-with-comments-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return c.ShowWithComments(ctx, "rt-2j9")
			},
			wantArgs: argv("show", "--include-comments", "rt-2j9", "--json"),
			wantIDs:  []string{"rt-2j9"},
		},
		{
			name:    "list by status",
			fixture: "list-status-in-progress-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return c.List(ctx, beads.ListOptions{Status: beads.StatusInProgress})
			},
			wantArgs: argv("list", "--limit", "0", "--status", "in_progress", "--json"),
			wantIDs:  []string{"rt-c1x"},
		},
		{
			name:    "list all",
			fixture: "list-all-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return c.List(ctx, beads.ListOptions{All: true})
			},
			wantArgs: argv("list", "--limit", "0", "--all", "--json"),
			wantIDs:  []string{"rt-chn", "rt-999", "rt-wjd", "rt-cjz", "rt-9e0", "rt-wjd.1", "rt-c1x", "rt-2j9", "rt-hz0", "rt-o3o"},
		},
		{
			name:    "blocked",
			fixture: "blocked-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return c.Blocked(ctx)
			},
			wantArgs: argv("blocked", "--json"),
			wantIDs:  []string{"rt-9e0", "rt-2j9", "rt-hz0"},
		},
		{
			name:    "create with every option",
			fixture: "create-full-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				i, err := c.Create(ctx, beads.CreateOptions{
					Title: "Implement config parser", Description: "Parse it.", Type: "feature",
					Priority: intp(0), Acceptance: "AC", Design: "D", Notes: "N",
					Labels: []string{"backend", "parser"}, Parent: "rt-wjd", ID: "rt-x1", Deps: []string{"rt-a", "related:rt-b"},
				})
				return []beads.Issue{i}, err
			},
			wantArgs: argv("create", "Implement config parser", "--description", "Parse it.", "--type", "feature",
				"--priority", "0", "--acceptance", "AC", "--design", "D", "--notes", "N", "--labels", "backend,parser",
				"--parent", "rt-wjd", "--id", "rt-x1", "--deps", "rt-a,related:rt-b", "--json"),
			wantIDs: []string{"rt-cjz"},
		},
		{
			name:    "create with a title that looks like a flag",
			fixture: "create-default-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				i, err := c.Create(ctx, beads.CreateOptions{Title: "--verbose is ignored"})
				return []beads.Issue{i}, err
			},
			wantArgs: argv("create", "--title", "--verbose is ignored", "--json"),
			wantIDs:  []string{"rt-2j9"},
		},
		{
			name:    "update status",
			fixture: "update-status-blocked-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				i, err := c.UpdateStatus(ctx, "rt-hz0", beads.StatusBlocked)
				return []beads.Issue{i}, err
			},
			wantArgs: argv("update", "rt-hz0", "--status", "blocked", "--json"),
			wantIDs:  []string{"rt-hz0"},
		},
		{
			name:    "claim",
			fixture: "update-claim-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				i, err := c.Claim(ctx, "rt-wjd.1")
				return []beads.Issue{i}, err
			},
			wantArgs: argv("update", "rt-wjd.1", "--claim", "--json"),
			wantIDs:  []string{"rt-wjd.1"},
		},
		{
			name:    "append notes never replaces them",
			fixture: "update-append-notes",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				i, err := c.AppendNotes(ctx, "rt-cjz", "-- appended line")
				return []beads.Issue{i}, err
			},
			wantArgs: argv("update", "rt-cjz", "--append-notes", "-- appended line", "--json"),
			wantIDs:  []string{"rt-cjz"},
		},
		{
			name:    "update fields for a revert",
			fixture: "update-priority-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				i, err := c.Update(ctx, "rt-2j9", beads.Set{Flag: "priority", Value: "0"},
					beads.Set{Flag: "type", Value: "task"}, beads.Set{Flag: "acceptance", Value: ""},
					beads.Set{Flag: "title", Value: "T"}, beads.Set{Flag: "description", Value: "D"},
					beads.Set{Flag: "design", Value: "G"})
				return []beads.Issue{i}, err
			},
			wantArgs: argv("update", "rt-2j9", "--priority", "0", "--type", "task", "--acceptance", "",
				"--title", "T", "--description", "D", "--design", "G", "--json"),
			wantIDs: []string{"rt-2j9"},
		},
		{
			name:    "close with reason",
			fixture: "close-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				i, err := c.Close(ctx, "rt-cjz", "Implemented in commit abc123")
				return []beads.Issue{i}, err
			},
			wantArgs: argv("close", "rt-cjz", "--reason", "Implemented in commit abc123", "--json"),
			wantIDs:  []string{"rt-cjz"},
		},
		{
			name:    "reopen",
			fixture: "reopen-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				i, err := c.Reopen(ctx, "rt-cjz", "regression found")
				return []beads.Issue{i}, err
			},
			wantArgs: argv("reopen", "rt-cjz", "--reason", "regression found", "--json"),
			wantIDs:  []string{"rt-cjz"},
		},
		{
			name:    "dep add blocks",
			fixture: "dep-add-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return nil, c.DepAdd(ctx, "rt-hz0", "rt-chn", "")
			},
			wantArgs: argv("dep", "add", "rt-hz0", "rt-chn", "--json"),
		},
		{
			name:    "dep add with a type",
			fixture: "dep-add-related-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return nil, c.DepAdd(ctx, "rt-2j9", "rt-kaz", "related")
			},
			wantArgs: argv("dep", "add", "rt-2j9", "rt-kaz", "--type", "related", "--json"),
		},
		{
			name:    "dep remove",
			fixture: "dep-remove",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return nil, c.DepRemove(ctx, "rt-c1x", "rt-chn")
			},
			wantArgs: argv("dep", "remove", "rt-c1x", "rt-chn", "--json"),
		},
		{
			name:    "label add",
			fixture: "label-add-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return nil, c.LabelAdd(ctx, "rt-2j9", "ci")
			},
			wantArgs: argv("label", "add", "rt-2j9", "ci", "--json"),
		},
		{
			name:    "label remove",
			fixture: "label-remove-json",
			run: func(c *beads.Client) ([]beads.Issue, error) {
				return nil, c.LabelRemove(ctx, "rt-2j9", "infra")
			},
			wantArgs: argv("label", "remove", "rt-2j9", "infra", "--json"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t, tt.fixture)
			got, err := tt.run(f.Client)
			is.NoErr(err)
			is.Equal(f.args(t), tt.wantArgs)
			is.Equal(f.Calls(), int64(1))
			if tt.wantIDs != nil {
				is.Equal(ids(got), tt.wantIDs)
			}
		})
	}
}

func TestClientDirEnvActor(t *testing.T) {
	is := is.New(t)
	f := newFake(t, "envelope-ready-json")
	f.Env = append(f.Env, "BD_JSON_ENVELOPE=1", "BEADS_DIR=/x/.beads")
	f.Actor = "ralph"
	got, err := f.Ready(context.Background(), beads.ReadyOptions{})
	is.NoErr(err)
	is.Equal(ids(got), []string{"rt-5fa"}) // the envelope is unwrapped
	calls := f.calls(t)
	is.Equal(len(calls), 1)
	is.Equal(calls[0].Args, argv("--actor", "ralph", "ready", "--limit", "0", "--json"))
	is.Equal(calls[0].Env, map[string]string{"BD_JSON_ENVELOPE": "1", "BEADS_DIR": "/x/.beads"})
	wantDir, err := filepath.EvalSymlinks(f.Dir)
	is.NoErr(err)
	gotDir, err := filepath.EvalSymlinks(calls[0].Dir)
	is.NoErr(err)
	is.Equal(gotDir, wantDir) // bd runs in Client.Dir
}

func TestClientStats(t *testing.T) {
	is := is.New(t)
	f := newFake(t, "stats-json")
	s, err := f.Stats(context.Background())
	is.NoErr(err)
	is.Equal(s.Total, 10)
	is.Equal(s.Ready, 4)
	is.Equal(f.args(t), argv("stats", "--json"))
}

func TestClientReopenOpenIssueShowsIt(t *testing.T) {
	is := is.New(t)
	// Reopening an open issue exits 0 and prints nothing on stdout.
	f := newFake(t, "reopen-not-closed", "show-blocked-json")
	got, err := f.Reopen(context.Background(), "rt-2j9", "")
	is.NoErr(err)
	is.Equal(got.ID, "rt-2j9")
	calls := f.calls(t)
	is.Equal(len(calls), 2)
	is.Equal(calls[0].Args, argv("reopen", "rt-2j9", "--json"))
	is.Equal(calls[1].Args, argv("show", "rt-2j9", "--json"))
	is.Equal(f.Calls(), int64(2))
}

func TestClientStderrNoteOnSuccess(t *testing.T) {
	is := is.New(t)
	// Exit 0 with a note on stderr is success: only the exit code counts.
	f := newFake(t, "ready-limit-2")
	got, err := f.Ready(context.Background(), beads.ReadyOptions{Limit: 2})
	is.NoErr(err)
	is.Equal(len(got), 2)
}

func TestClientExitErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		fixture    string
		run        func(c *beads.Client) error
		wantMsg    string // ExitError.Message, from an {"error"} object
		wantInErr  string // a substring of err.Error()
		notInErr   string // not in err.Error()
		wantStderr string // a substring of ExitError.Stderr
		notFound   bool   // errors.Is(err, ErrIssueNotFound)
	}{
		{
			name:    "unknown id, text on stderr",
			fixture: "err-unknown-id-update-json",
			run: func(c *beads.Client) error {
				_, err := c.UpdateStatus(ctx, "rt-zzz", beads.StatusInProgress)
				return err
			},
			wantInErr:  `bd update rt-zzz --status in_progress --json exited with code 1: Error resolving rt-zzz`,
			wantStderr: `Error resolving rt-zzz: no issue found matching "rt-zzz"`,
			notFound:   true,
		},
		{
			name:    "unknown id, error object on stdout and text on stderr",
			fixture: "err-unknown-id-show-json",
			run: func(c *beads.Client) error {
				_, err := c.Show(ctx, "rt-zzz")
				return err
			},
			wantMsg:    msgNoIssues,
			wantInErr:  msgNoIssues,
			wantStderr: "Error fetching rt-zzz",
			notFound:   true,
		},
		{
			name:    "error object on stdout only",
			fixture: "err-bad-priority-update",
			run: func(c *beads.Client) error {
				_, err := c.Update(ctx, "rt-2j9", beads.Set{Flag: "priority", Value: "9"})
				return err
			},
			wantMsg:   msgBadPrio9,
			wantInErr: "exited with code 1: " + msgBadPrio9,
		},
		{
			name:    "error object on stderr",
			fixture: "err-bad-priority-create",
			run: func(c *beads.Client) error {
				_, err := c.Create(ctx, beads.CreateOptions{Title: "x", Priority: intp(7)})
				return err
			},
			wantMsg:   msgBadPrio7,
			wantInErr: msgBadPrio7,
		},
		{
			name:    "close refused",
			fixture: "close-blocked-issue-json",
			run: func(c *beads.Client) error {
				_, err := c.Close(ctx, "rt-hz0", "blocked but closing")
				return err
			},
			wantInErr:  "cannot close rt-hz0: blocked by open issues [rt-chn]",
			wantStderr: "use --force to override",
		},
		{
			name:    "claim conflict",
			fixture: "update-claim-other-actor-json",
			run: func(c *beads.Client) error {
				_, err := c.Claim(ctx, "rt-wjd.1")
				return err
			},
			wantInErr: "Error claiming rt-wjd.1: issue already claimed by Test User",
		},
		{
			name:    "bad flag prints usage; the message keeps the error line",
			fixture: "err-bad-flag-json",
			run: func(c *beads.Client) error {
				_, err := c.Ready(ctx, beads.ReadyOptions{})
				return err
			},
			wantInErr:  "Error: unknown flag: --bogus-flag",
			notInErr:   "Global Flags",
			wantStderr: "Usage:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t, tt.fixture)
			err := tt.run(f.Client)
			var ee *beads.ExitError
			is.True(errors.As(err, &ee)) // a non-zero exit is an *ExitError
			is.Equal(ee.Code, 1)
			is.Equal(ee.Message, tt.wantMsg)
			is.Equal(ee.Args, f.args(t))
			is.True(strings.Contains(ee.Stderr, tt.wantStderr))
			is.True(strings.Contains(err.Error(), tt.wantInErr))
			if tt.notInErr != "" {
				is.True(!strings.Contains(err.Error(), tt.notInErr))
			}
			is.Equal(errors.Is(err, beads.ErrIssueNotFound), tt.notFound)
			is.True(!errors.Is(err, beads.ErrNotInitialized))
		})
	}
}

func TestClientNotInitialized(t *testing.T) {
	is := is.New(t)
	f := newFake(t, "err-not-initialized-ready")
	_, err := f.Ready(context.Background(), beads.ReadyOptions{})
	is.True(errors.Is(err, beads.ErrNotInitialized))
	var ni *beads.NotInitializedError
	is.True(errors.As(err, &ni))
	is.Equal(ni.Dir, f.Dir)
	is.True(strings.Contains(err.Error(), `"bd init"`)) // the message suggests bd init
	is.True(strings.Contains(err.Error(), f.Dir))       // and names the directory
	var ee *beads.ExitError
	is.True(errors.As(err, &ee)) // the exit error is still there
	is.Equal(ee.Code, 1)
}

func TestClientBadJSON(t *testing.T) {
	is := is.New(t)
	// bd update with nothing to change prints plain text and exits 0.
	f := newFake(t, "update-no-change-json")
	_, err := f.UpdateStatus(context.Background(), "rt-2j9", beads.StatusOpen)
	is.True(errors.Is(err, beads.ErrBadJSON))
	var bj *beads.BadJSONError
	is.True(errors.As(err, &bj))
	is.Equal(bj.Head, "No updates specified\n")
	is.True(strings.Contains(err.Error(), "bd update rt-2j9 --status open --json")) // names the command
	is.True(strings.Contains(err.Error(), "No updates specified"))                  // quotes the output
}

func TestClientWrongShape(t *testing.T) {
	is := is.New(t)
	// Two issues where one was expected.
	f := newFake(t, "close-multi-json")
	_, err := f.Close(context.Background(), "rt-c1x", "batch")
	is.True(errors.Is(err, beads.ErrBadJSON))
}

func TestClientNotInstalled(t *testing.T) {
	ctx := context.Background()
	t.Run("missing path", func(t *testing.T) {
		is := is.New(t)
		c := &beads.Client{Bin: filepath.Join(t.TempDir(), "bd")}
		_, err := c.Ready(ctx, beads.ReadyOptions{})
		is.True(errors.Is(err, beads.ErrNotInstalled))
		var ni *beads.NotInstalledError
		is.True(errors.As(err, &ni))
		is.True(strings.Contains(err.Error(), "go install github.com/steveyegge/beads/cmd/bd@latest"))
		is.True(strings.Contains(err.Error(), "@beads/bd"))
		is.Equal(c.Calls(), int64(0)) // nothing started
	})
	t.Run("not on PATH", func(t *testing.T) {
		is := is.New(t)
		t.Setenv("PATH", t.TempDir())
		c := &beads.Client{}
		_, err := c.Show(ctx, "rt-1")
		is.True(errors.Is(err, beads.ErrNotInstalled))
		_, err = beads.LookPath("")
		is.True(errors.Is(err, beads.ErrNotInstalled))
		_, err = beads.NewClient("bd", t.TempDir())
		is.True(errors.Is(err, beads.ErrNotInstalled))
		is.True(strings.Contains(err.Error(), "npm install -g @beads/bd"))
	})
}

func TestLookPathAndNewClient(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bd")
	is.NoErr(os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	t.Setenv("PATH", dir)
	got, err := beads.LookPath("bd")
	is.NoErr(err)
	is.Equal(got, bin) // an absolute path
	c, err := beads.NewClient("", "/some/repo")
	is.NoErr(err)
	is.Equal(c.Bin, bin)
	is.Equal(c.Dir, "/some/repo")
	is.Equal(c.Timeout, beads.DefaultTimeout)
}

func TestClientMissingDir(t *testing.T) {
	is := is.New(t)
	f := newFake(t, "ready-empty")
	f.Dir = filepath.Join(f.Dir, "gone")
	_, err := f.Ready(context.Background(), beads.ReadyOptions{})
	is.True(err != nil)
	is.True(!errors.Is(err, beads.ErrNotInstalled)) // a missing directory is not a missing bd
	is.True(errors.Is(err, os.ErrNotExist))
	is.True(strings.Contains(err.Error(), "working directory"))
}

func TestClientRejectsBadOperands(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(c *beads.Client) error
	}{
		{"empty id", func(c *beads.Client) error { _, err := c.Show(ctx, ""); return err }},
		{"flag-like id", func(c *beads.Client) error { _, err := c.ShowMany(ctx, "rt-1", "--all"); return err }},
		{"flag-like id with comments", func(c *beads.Client) error { _, err := c.ShowWithComments(ctx, "rt-1", "--all"); return err }},
		{"flag-like parent", func(c *beads.Client) error {
			_, err := c.Ready(ctx, beads.ReadyOptions{Parent: "-x"})
			return err
		}},
		{"negative limit", func(c *beads.Client) error {
			_, err := c.Ready(ctx, beads.ReadyOptions{Limit: -1})
			return err
		}},
		{"empty title", func(c *beads.Client) error {
			_, err := c.Create(ctx, beads.CreateOptions{Title: "  "})
			return err
		}},
		{"update without fields", func(c *beads.Client) error { _, err := c.Update(ctx, "rt-1"); return err }},
		{"update with a dashed flag name", func(c *beads.Client) error {
			_, err := c.Update(ctx, "rt-1", beads.Set{Flag: "-p", Value: "0"})
			return err
		}},
		{"update with a flag name holding a value", func(c *beads.Client) error {
			_, err := c.Update(ctx, "rt-1", beads.Set{Flag: "priority=0", Value: "1"})
			return err
		}},
		{"update of a flag-like id", func(c *beads.Client) error {
			_, err := c.Update(ctx, "--all", beads.Set{Flag: "priority", Value: "0"})
			return err
		}},
		{"empty status", func(c *beads.Client) error { _, err := c.UpdateStatus(ctx, "rt-1", ""); return err }},
		{"empty note", func(c *beads.Client) error { _, err := c.AppendNotes(ctx, "rt-1", ""); return err }},
		{"flag-like close id", func(c *beads.Client) error { _, err := c.Close(ctx, "-f", "x"); return err }},
		{"flag-like dep target", func(c *beads.Client) error { return c.DepAdd(ctx, "rt-1", "--force", "") }},
		{"empty dep source", func(c *beads.Client) error { return c.DepRemove(ctx, "", "rt-2") }},
		{"flag-like label", func(c *beads.Client) error { return c.LabelAdd(ctx, "rt-1", "--all") }},
		{"empty label", func(c *beads.Client) error { return c.LabelRemove(ctx, "rt-1", "") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			f := newFake(t, "show-json")
			is.True(tt.run(f.Client) != nil)
			is.Equal(f.Calls(), int64(0)) // refused before running bd
		})
	}
	is := is.New(t)
	f := newFake(t, "show-json")
	got, err := f.ShowMany(ctx)
	is.NoErr(err)
	is.Equal(len(got), 0)
	is.Equal(f.Calls(), int64(0)) // no ids, no call
}

func TestClientCallsConcurrent(t *testing.T) {
	is := is.New(t)
	f := newFake(t, "ready-mixed")
	const n = 4
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := f.Ready(context.Background(), beads.ReadyOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	is.Equal(f.Calls(), int64(n))
	is.Equal(len(f.calls(t)), n)
}

func TestClientOnCallSeesEveryCall(t *testing.T) {
	is := is.New(t)
	f := newFake(t, "stats-json")
	var seen []string
	var took []bool
	f.OnCall = func(args []string, d time.Duration, err error) {
		seen = append(seen, strings.Join(args, " "))
		took = append(took, d > 0 && err == nil)
	}
	_, err := f.Stats(context.Background())
	is.NoErr(err)
	is.Equal(seen, []string{"stats"}) // the arguments as the caller gave them
	is.Equal(took, []bool{true})
	f.Bin = filepath.Join(t.TempDir(), "no-such-bd")
	_, err = f.Stats(context.Background())
	is.True(err != nil)
	is.Equal(len(seen), 2) // a failed start is reported too
}

// TestListAllWithComments: one `bd export` gives what `bd list --all`
// lists, with comments: bd's gates, which its list leaves out and its
// export keeps, are dropped, and so are records that are not issues.
func TestListAllWithComments(t *testing.T) {
	is := is.New(t)
	export := `{"_type":"issue","id":"t-1","title":"one","status":"open","priority":1,"issue_type":"task","comment_count":1,"comments":[{"id":"c1","issue_id":"t-1","author":"me","text":"hello","created_at":"2026-11-28T12:06:54Z"}],"dependencies":[{"issue_id":"t-1","depends_on_id":"t-e","type":"parent-child"}]}
{"_type":"issue","id":"t-g","title":"wait for CI","status":"open","priority":2,"issue_type":"gate"}
{"_type":"memory","key":"k","value":"v"}
{"_type":"issue","id":"t-e","title":"epic","status":"closed","priority":2,"issue_type":"epic"}
`
	bin, state := replayOutputs(t, fixture{Stdout: []byte(export)})
	c := &beads.Client{Bin: bin, Dir: t.TempDir()}
	got, err := c.ListAllWithComments(context.Background())
	is.NoErr(err)
	is.Equal(ids(got), []string{"t-1", "t-e"})
	is.Equal(got[0].Parent, "t-e") // list prints it; the export's edge gives it
	is.Equal(len(got[0].Comments), 1)
	calls := readCalls(t, state)
	is.Equal(len(calls), 1)
	is.Equal(calls[0].Args[0], "export")
}
