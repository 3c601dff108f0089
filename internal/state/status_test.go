package state

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
)

func statusText(t *testing.T, st Status) string {
	t.Helper()
	var b bytes.Buffer
	if err := st.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	t.Logf("ralphd status:\n%s", b.String())
	return b.String()
}

func TestStatusFreshRepo(t *testing.T) {
	isolateGit(t)
	is := is.New(t)
	repo := newRepo(t)
	run(t, repo, nil, "git", "config", "remote.origin.url", "git@github.com:me/app.git")
	id, err := ProjectID(context.Background(), repo)
	is.NoErr(err)
	root := t.TempDir()

	st, err := ReadStatus(root, id, 3)
	is.NoErr(err)
	is.True(!st.StateExists)
	is.Equal(st.StateDir, ProjectDir(root, id.ID))
	text := statusText(t, st)
	is.True(strings.Contains(text, id.ID+" (id from the remote origin git@github.com:me/app.git)"))
	is.True(strings.Contains(text, "(not created yet)"))
	is.True(strings.Contains(text, "No state yet"))
	is.True(strings.Contains(text, "`ralphd build`"))
	// Reading status created nothing.
	_, err = ReadStatus(root, id, 3)
	is.NoErr(err)
	st2, _ := ReadStatus(root, id, 3)
	is.True(!st2.StateExists)
}

func TestStatusNoRemote(t *testing.T) {
	isolateGit(t)
	is := is.New(t)
	repo := newRepo(t)
	id, err := ProjectID(context.Background(), repo)
	is.NoErr(err)
	root := t.TempDir()
	s, err := Open(context.Background(), root, id, "v1.0.0")
	is.NoErr(err)

	st, err := ReadStatus(root, id, 3)
	is.NoErr(err)
	is.True(st.StateExists)
	is.Equal(st.Project.Rule, RulePath)
	is.Equal(st.CreatedBy, CreatedByRalphd)
	text := statusText(t, st)
	is.True(strings.Contains(text, `id from the repository path; there is no "origin" remote`))
	is.True(strings.Contains(text, "Adding a remote later changes the id"))
	is.True(strings.Contains(text, "State dir   "+s.Dir()))
	is.True(strings.Contains(text, "no ralphd is running on this project"))
	is.True(strings.Contains(text, "Attempts    none counted"))
	is.True(strings.Contains(text, "Last run    none recorded by ralphd yet"))
	is.True(strings.Contains(text, "Logs        none yet"))
}

func TestStatusBashLoopState(t *testing.T) {
	isolateGit(t)
	is := is.New(t)
	repo := newRepo(t)
	run(t, repo, nil, "git", "config", "remote.origin.url", "git@github.com:someone/app.git")
	id, err := ProjectID(context.Background(), repo)
	is.NoErr(err)
	id.ID = testID // the hand-built state dir's id
	root := t.TempDir()
	bashLoopState(t, root, repo)
	writeFile(t, LegacyAttemptsPath(repo), "bd-old:1\n")

	st, err := ReadStatus(root, id, 3)
	is.NoErr(err)
	is.Equal(st.CreatedBy, CreatedByBashLoop)
	is.Equal(st.CreatedAt, "2026-01-26T10:11:12+01:00")
	is.Equal(st.Attempts, []AttemptStatus{
		{IssueID: "app-xyz", Count: 1, Tier: "none"},
		{IssueID: "bd-a1b", Count: 2, Tier: "none"},
		{IssueID: "bd-c3d.1", Count: 3, AtLimit: true, Stuck: true, StuckCause: "attempt_cap", Tier: "none"},
	})
	is.Equal(len(st.Logs), 1)
	is.Equal(st.Logs[0].Name, "2026-01-26T10-11-12.log")
	is.Equal(st.LegacyAttempts, LegacyAttemptsPath(repo))
	is.Equal(len(st.Warnings), 0)

	text := statusText(t, st)
	is.True(strings.Contains(text, "the bash loop (loop.sh), created 2026-01-26T10:11:12+01:00"))
	is.True(strings.Contains(text, "stuck limit 3"))
	is.True(strings.Contains(text, "bd-c3d.1   3  STUCK"))
	is.True(strings.Contains(text, "`ralphd reset bd-c3d.1`"))
	is.True(!strings.Contains(text, "bd-a1b     2  STUCK"))
	is.True(strings.Contains(text, "2026-01-26T10-11-12.log"))
	is.True(strings.Contains(text, "ralphd migrate"))
}

func TestStatusWithRalphdHistory(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	id := testIdentity(t)
	s, err := Open(context.Background(), root, id, "v1.0.0")
	is.NoErr(err)
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	is.NoErr(s.AppendHistory(Record{RunID: "r1", Mode: "build", Iteration: 1, IssueID: "bd-1", Attempt: 1, StartedAt: t0, EndedAt: t0.Add(time.Minute), Outcome: "ok", CostUSD: cost(1.5), Tokens: agent.Tokens{InputTokens: 1000, OutputTokens: 200}}))
	is.NoErr(s.AppendHistory(Record{RunID: "r1", Kind: KindRunEnd, Mode: "build", Iteration: 1, EndedAt: t0.Add(2 * time.Minute), StopReason: "success"}))
	is.NoErr(s.AppendHistory(Record{RunID: "r2", Mode: "build", Iteration: 1, IssueID: "bd-2", Attempt: 1, StartedAt: t0.Add(time.Hour), EndedAt: t0.Add(61 * time.Minute), Outcome: "agent_error", Gate: "verify"}))
	_, err = s.IncrementAttempt("bd-2")
	is.NoErr(err)
	_, err = s.IncrementAttempt("bd-2")
	is.NoErr(err)
	is.NoErr(s.WriteRunning(Running{PID: 4321, PGID: 4321, Iteration: 2, IssueID: "bd-2", Attempt: 2, Mode: "build", RunID: "r2", StartedAt: t0.Add(62 * time.Minute)}))
	writeFile(t, s.ReportsDir()+"/20260102T100000Z.md", "# report")
	writeFile(t, s.ReportsDir()+"/20260102T110000Z.md", "# report")
	writeFile(t, s.HistoryPath()+".bak", "") // not a log, not in logs/

	// Without a lock holder the running record is a leftover.
	st, err := ReadStatus(root, id, 3)
	is.NoErr(err)
	is.Equal(st.Lock, (*LockInfo)(nil))
	is.True(st.Running != nil)
	is.Equal(st.LastRun.RunID, "r2")
	is.True(!st.LastRun.Ended)
	is.Equal(st.Totals.Runs, 2)
	is.Equal(*st.Totals.CostUSD, 1.5)
	is.Equal(len(st.Issues), 2)
	is.Equal(st.LatestReport, s.ReportsDir()+"/20260102T110000Z.md")
	text := statusText(t, st)
	is.True(strings.Contains(text, "left over: an agent (PID 4321, bd-2 (attempt 2), iteration 2)"))
	is.True(strings.Contains(text, "ended without a stop record"))
	is.True(strings.Contains(text, "cost unknown, no tokens reported"))
	is.True(strings.Contains(text, "All runs    2 runs, 2 iterations; cost $1.50, tokens 1000 in / 200 out"))
	is.True(strings.Contains(text, "bd-2 1 iteration, last agent_error at verify"))

	// With the lock held, it is the live agent.
	s.Now = fixedNow
	l, err := s.Lock("build")
	is.NoErr(err)
	defer l.Release()
	st, err = ReadStatus(root, id, 3)
	is.NoErr(err)
	is.True(st.Lock != nil)
	is.Equal(st.Lock.Mode, "build")
	text = statusText(t, st)
	is.True(strings.Contains(text, "yes: ralphd PID "))
	is.True(strings.Contains(text, "agent PID 4321 working on bd-2 (attempt 2), iteration 2"))
	is.True(strings.Contains(text, "still running"))
}

func TestStatusWarnsWithoutRepairing(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	id := testIdentity(t)
	s, err := Open(context.Background(), root, id, "v")
	is.NoErr(err)
	writeFile(t, s.AttemptsPath(), "bd-1:2\n@@@\n")
	writeFile(t, s.HistoryPath(), "{broken\n")
	st, err := ReadStatus(root, id, 0)
	is.NoErr(err)
	is.Equal(len(st.Warnings), 2)
	is.Equal(st.Attempts, []AttemptStatus{{IssueID: "bd-1", Count: 2, Tier: "none"}}) // limit 0 marks none
	is.Equal(readFile(t, s.AttemptsPath()), "bd-1:2\n@@@\n")                          // untouched
	text := statusText(t, st)
	is.True(strings.Contains(text, "warning: "))
}

// TestStatusJSONStable pins the top-level keys of `ralphd status --json`
// and that lists encode as [] (never null).
func TestStatusJSONStable(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	id := testIdentity(t)
	_, err := Open(context.Background(), root, id, "v")
	is.NoErr(err)
	st, err := ReadStatus(root, id, 3)
	is.NoErr(err)
	data, err := json.Marshal(st)
	is.NoErr(err)
	var m map[string]json.RawMessage
	is.NoErr(json.Unmarshal(data, &m))
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	is.Equal(keys, []string{"attempts", "created_at", "created_by", "fleet", "issues", "last_run", "layers", "lock", "logs", "project",
		"ralphd_version", "running", "state_dir", "state_exists", "stuck_limit", "totals", "tree_work", "version", "warnings"})
	for _, k := range []string{"attempts", "issues", "layers", "logs", "warnings"} {
		is.Equal(string(m[k]), "[]")
	}
	is.Equal(string(m["lock"]), "null")
	is.Equal(string(m["project"]), `{"project_id":"`+testID+`","rule":"path","remote_url":"none","project_path":"`+id.TopLevel+`"}`)
}

// The last run's sandbox and network come from its BUILD records, and the
// layers the caller probed are listed, each off one with what it leaves
// open and its fix.
func TestStatusLayersAndLastRunNetwork(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		rec     Record
		want    string
		notWant string
	}{
		{"allowlist", Record{Sandbox: "bwrap", Network: "allowlist", NetworkAllow: []string{"api.anthropic.com", "registry.npmjs.org"}},
			"BUILD agent sandboxed (bwrap); network: only through ralphd's proxy, to api.anthropic.com, registry.npmjs.org", ""},
		{"open", Record{Sandbox: "bwrap", Network: "open"},
			"BUILD agent sandboxed (bwrap); network: the host's, unfiltered (network=open)", "proxy"},
		{"a record from before the network", Record{Sandbox: "bwrap"},
			"BUILD agent sandboxed (bwrap)\n", "network"},
		{"unsandboxed", Record{Sandbox: "none"},
			"BUILD agent NOT sandboxed", "network:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			root := t.TempDir()
			id := testIdentity(t)
			s, err := Open(context.Background(), root, id, "v1.0.0")
			is.NoErr(err)
			r := tc.rec
			r.RunID, r.Mode, r.Iteration, r.IssueID, r.StartedAt, r.EndedAt, r.Outcome = "r1", "build", 1, "bd-1", t0, t0.Add(time.Minute), "ok"
			is.NoErr(s.AppendHistory(r))
			st, err := ReadStatus(root, id, 3)
			is.NoErr(err)
			is.Equal(st.LastRun.Network, tc.rec.Network) // read back from history
			text := statusText(t, st)
			is.True(strings.Contains(text, tc.want)) // the last run's sandbox and network
			if tc.notWant != "" {
				last, _, _ := strings.Cut(text[strings.Index(text, "BUILD agent"):], "\n")
				is.True(!strings.Contains(last, tc.notWant)) // nothing claimed that the record does not say
			}
		})
	}

	is := is.New(t)
	st, err := ReadStatus(t.TempDir(), testIdentity(t), 3)
	is.NoErr(err)
	is.Equal(st.Layers, []Layer{}) // ReadStatus probes nothing; JSON says []
	is.True(!strings.Contains(statusText(t, st), "\nLayers "))
	st.Layers = []Layer{
		{Name: "sandbox", On: true, Detail: "bubblewrap works here"},
		{Name: "network", Detail: "network=open", Open: "any host", Fix: "set network to allowlist"},
	}
	text := statusText(t, st)
	is.True(strings.Contains(text, "\nLayers      against the BUILD agent"))
	is.True(strings.Contains(text, "\n            sandbox  on   bubblewrap works here\n"))
	is.True(strings.Contains(text, "\n            network  OFF  network=open\n"+
		"                         leaves open: any host\n"+
		"                         to turn it on: set network to allowlist\n"))
	b, err := json.Marshal(st)
	is.NoErr(err)
	is.True(strings.Contains(string(b), `"layers":[{"name":"sandbox","on":true,"detail":"bubblewrap works here"},{"name":"network","on":false,"detail":"network=open","open":"any host","fix":"set network to allowlist"}]`))
}

// CheckRoot makes a missing state root, and refuses what a run refuses: a
// link where the root or its projects dir should be, or a file there.
func TestCheckRoot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the root
		want  string                                // "" for no error
	}{
		{"missing: made", func(t *testing.T, dir string) string { return dir + "/a/b" }, ""},
		{"the root is a link", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/real")
			symlink(t, dir+"/real", dir+"/root")
			return dir + "/root"
		}, "never follows a link"},
		{"projects is a link", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/elsewhere")
			mkdir(t, dir+"/root")
			symlink(t, dir+"/elsewhere", dir+"/root/projects")
			return dir + "/root"
		}, "never follows a link"},
		{"a file in the way", func(t *testing.T, dir string) string {
			writeFile(t, dir+"/file", "x")
			return dir + "/file/root"
		}, "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			err := CheckRoot(tc.setup(t, dir))
			if tc.want == "" {
				is.NoErr(err)
				is.NoErr(CheckRoot(dir + "/a/b")) // and again, once made
				ents, err := os.ReadDir(dir + "/a/b/projects")
				is.NoErr(err)
				is.Equal(len(ents), 0) // the check's file is gone
				return
			}
			is.True(err != nil && strings.Contains(err.Error(), tc.want)) // refused, saying why
		})
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
