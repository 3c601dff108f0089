package standin

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// readyIDs runs `ready --json` with extra args and returns the ids.
func (s *scratch) readyIDs(args ...string) []string {
	s.t.Helper()
	r := s.bd(s.repo, append([]string{"ready", "--json"}, args...)...)
	if r.code != 0 {
		s.t.Fatalf("ready: %+v", r)
	}
	var items []struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &items); err != nil {
		s.t.Fatalf("ready output: %v\n%s", err, r.stdout)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids
}

func TestReadyRules(t *testing.T) {
	s := newScratch(t)
	base := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	s.clock = base
	s.runner.Now = func() time.Time { return s.clock }
	is := is.New(t)
	is.Equal(s.bd(s.repo, "init", "--prefix", "t", "--quiet").code, 0)
	at := func(d time.Duration) { s.clock = base.Add(d) }

	at(0)
	blocker := s.createID("Blocker", "-p", "1")
	at(time.Second)
	blocked := s.createID("Blocked", "-p", "0")
	is.Equal(s.bd(s.repo, "dep", "add", blocked, blocker).code, 0)
	at(2 * time.Second)
	epic := s.createID("Epic", "-t", "epic", "-p", "2")
	at(3 * time.Second)
	child := s.createID("Child", "--parent", epic, "-p", "2")
	at(4 * time.Second)
	grandchild := s.createID("Grandchild", "--parent", child, "-p", "3")
	at(5 * time.Second)
	wip := s.createID("In progress", "-p", "0")
	is.Equal(s.bd(s.repo, "update", wip, "--status", "in_progress").code, 0)
	at(6 * time.Second)
	later := s.createID("Later", "--defer", "+1h")
	at(7 * time.Second)
	related := s.createID("Related", "-p", "4")
	is.Equal(s.bd(s.repo, "dep", "add", related, blocker, "-t", "related").code, 0)

	// Priority ascending, then newest first; parent-child and related
	// edges do not block; epics are ready; blocked, in_progress and
	// deferred issues are not.
	want := []string{blocker, child, epic, grandchild, related}
	is.Equal(strings.Join(s.readyIDs(), " "), strings.Join(want, " "))
	is.Equal(strings.Join(s.readyIDs("--sort", "oldest"), " "), strings.Join([]string{blocker, epic, child, grandchild, related}, " "))
	is.Equal(strings.Join(s.readyIDs("--parent", epic), " "), strings.Join([]string{child, grandchild}, " ")) // descendants
	is.Equal(strings.Join(s.readyIDs("-t", "epic"), " "), epic)
	is.Equal(strings.Join(s.readyIDs("--limit", "0"), " "), strings.Join(want, " "))

	// Closing the blocker frees the blocked issue.
	is.Equal(s.bd(s.repo, "close", blocker).code, 0)
	is.Equal(s.readyIDs()[0], blocked)

	// A deferred parent hides its descendants.
	is.Equal(s.bd(s.repo, "defer", epic).code, 0)
	for _, id := range s.readyIDs() {
		is.True(id != child && id != grandchild)
	}

	// Deferral ends when defer_until passes.
	at(2 * time.Hour)
	is.True(strings.Contains(strings.Join(s.readyIDs(), " "), later))

	// Hybrid: issues older than 48 hours go last, oldest first.
	at(72 * time.Hour)
	fresh := s.createID("Fresh", "-p", "4")
	is.Equal(s.readyIDs("--sort", "hybrid")[0], fresh)
}

func TestCloseAndUpdateRules(t *testing.T) {
	s := initRepo(t)
	is := is.New(t)
	a := s.createID("A")
	b := s.createID("B")
	is.Equal(s.bd(s.repo, "dep", "add", b, a).code, 0)

	r := s.bd(s.repo, "close", b)
	is.Equal(r.code, 1)
	is.Equal(r.stderr, fmt.Sprintf("cannot close %s: blocked by open issues [%s] (use --force to override)\n", b, a))
	is.Equal(s.bd(s.repo, "close", b, "--force").code, 0)
	is.Equal(s.bd(s.repo, "reopen", b).code, 0)

	// update --status closed does not check blockers.
	r = s.bd(s.repo, "update", b, "--status", "closed", "--json")
	is.Equal(r.code, 0)
	is.True(strings.Contains(r.stdout, `"closed_at"`))

	// Notes: --notes replaces, --append-notes and note append with \n.
	is.Equal(s.bd(s.repo, "update", a, "--notes", "one").code, 0)
	is.Equal(s.bd(s.repo, "update", a, "--append-notes", "two").code, 0)
	is.Equal(s.bd(s.repo, "note", a, "three", "four").code, 0)
	r = s.bd(s.repo, "show", a, "--json")
	var shown []struct{ Notes string }
	is.NoErr(json.Unmarshal([]byte(r.stdout), &shown))
	is.Equal(shown[0].Notes, "one\ntwo\nthree four")

	// Labels.
	is.Equal(s.bd(s.repo, "update", a, "--add-label", "x", "--add-label", "y").code, 0)
	is.Equal(s.bd(s.repo, "update", a, "--remove-label", "x").code, 0)
	r = s.bd(s.repo, "label", "list", a, "--json")
	is.Equal(r.stdout, "[\n  \"y\"\n]\n")
	is.Equal(s.bd(s.repo, "update", a, "--set-labels", "p,q").code, 0)
	r = s.bd(s.repo, "label", "list", a, "--json")
	is.Equal(r.stdout, "[\n  \"p\",\n  \"q\"\n]\n")

	// Reopen clears closed_at and close_reason.
	is.Equal(s.bd(s.repo, "close", a, "-r", "done").code, 0)
	r = s.bd(s.repo, "reopen", a, "--json")
	is.Equal(r.code, 0)
	is.True(!strings.Contains(r.stdout, "closed_at") && !strings.Contains(r.stdout, "close_reason"))

	// A cycle is refused.
	r = s.bd(s.repo, "dep", "add", a, b)
	is.Equal(r.code, 1)
	is.Equal(r.stderr, "Error: adding dependency would create a cycle\n")

	// delete --force removes the issue and its links.
	r = s.bd(s.repo, "delete", a, "--force", "--json")
	is.Equal(r.code, 0)
	is.True(strings.Contains(r.stdout, `"dependencies_removed": 1`))
	r = s.bd(s.repo, "show", b, "--json")
	is.True(!strings.Contains(r.stdout, `"dependencies"`))
}

func TestEnvelopeQuietAndActor(t *testing.T) {
	s := initRepo(t)
	is := is.New(t)
	env := append(append([]string{}, s.baseEnv...), "BD_JSON_ENVELOPE=1", "BEADS_ACTOR=env-agent")
	var out strings.Builder
	var errOut strings.Builder
	code := s.runner.Main(t.Context(), []string{"create", "Wrapped", "--json"}, nil, &out, &errOut, env, s.repo)
	is.Equal(code, 0)
	var wrapped struct {
		Data struct {
			ID            string `json:"id"`
			CreatedBy     string `json:"created_by"`
			SchemaVersion *int   `json:"schema_version"`
		} `json:"data"`
		SchemaVersion int `json:"schema_version"`
	}
	is.NoErr(json.Unmarshal([]byte(out.String()), &wrapped))
	is.Equal(wrapped.SchemaVersion, 1)
	is.True(wrapped.Data.SchemaVersion == nil) // schema_version moves to the envelope
	is.Equal(wrapped.Data.CreatedBy, "env-agent")

	// --actor beats BEADS_ACTOR; git user.name is the fallback.
	r := s.bd(s.repo, "--actor", "flag-agent", "create", "By flag", "--json")
	is.True(strings.Contains(r.stdout, `"created_by": "flag-agent"`))
	r = s.bd(s.repo, "create", "By git", "--json")
	is.True(strings.Contains(r.stdout, `"created_by": "Test User"`))

	// Without beads.role, bd warns on stderr unless quiet.
	s.git(s.repo, "config", "--unset", "beads.role")
	r = s.bd(s.repo, "ready", "--json")
	is.True(strings.HasPrefix(r.stderr, "warning: beads.role not configured (GH#2950).\n"))
	r = s.bd(s.repo, "-q", "ready", "--json")
	is.Equal(r.stderr, "")

	// --readonly refuses writes but allows reads.
	r = s.bd(s.repo, "--readonly", "-q", "create", "x")
	is.Equal(r.code, 1)
	is.Equal(r.stderr, "Error: operation 'create' is not allowed in read-only mode\n")
	is.Equal(s.bd(s.repo, "--readonly", "-q", "list").code, 0)
}

func TestIDs(t *testing.T) {
	is := is.New(t)
	db := &database{Prefix: "rt"}
	db.index()
	inv := &invocation{db: db, fl: &flagValues{set: newFlagSet(), raw: map[string][]string{}}, env: map[string]string{"BEADS_ACTOR": "a"}, now: time.Unix(0, 42)}
	first := inv.newIssueID("title", "")
	is.True(len(first) == len("rt-abc"))
	// Occupy every 3-character candidate: the id grows to 4 characters.
	for n := 0; n < 10; n++ {
		db.add(&issue{ID: "rt-" + hashID("title", "", "a", inv.now, n, 3)})
	}
	is.Equal(len(inv.newIssueID("title", "")), len("rt-abcd"))

	// Child ids count up under the parent.
	db.add(&issue{ID: "rt-abc.1"})
	db.add(&issue{ID: "rt-abc.7"})
	is.Equal(inv.nextChild("rt-abc"), 8)

	// Partial ids resolve when unique.
	db.add(&issue{ID: "rt-zz1"})
	got, err := inv.resolve("zz1")
	is.NoErr(err)
	is.Equal(got.ID, "rt-zz1")
	_, err = inv.resolve("rt-")
	is.True(err != nil)
}

func TestParsers(t *testing.T) {
	now := time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC) // a Saturday
	for _, tt := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"+2d", now.Add(48 * time.Hour), true},
		{"+6h", now.Add(6 * time.Hour), true},
		{"+1w", now.Add(7 * 24 * time.Hour), true},
		{"tomorrow", now.Add(24 * time.Hour), true},
		{"next monday", now.AddDate(0, 0, 2), true},
		{"2026-12-01T10:00:00Z", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), true},
		{"someday", time.Time{}, false},
	} {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			got, err := parseWhen(tt.in, now)
			is.Equal(err == nil, tt.ok)
			if tt.ok {
				is.True(got.Equal(tt.want))
			}
		})
	}
	for _, tt := range []struct {
		in   string
		want int
		ok   bool
	}{{"0", 0, true}, {"P4", 4, true}, {"p2", 2, true}, {"5", 0, false}, {"high", 0, false}, {"", 0, false}} {
		t.Run("priority "+tt.in, func(t *testing.T) {
			is := is.New(t)
			got, err := parsePriority(tt.in)
			is.Equal(err == nil, tt.ok)
			is.Equal(got, tt.want)
		})
	}
	for _, tt := range []struct{ in, want string }{
		{"see rt-abc for details", "see [deleted:rt-abc] for details"},
		{"rt-abc.1 is a child", "rt-abc.1 is a child"},
		{"rt-abcd differs", "rt-abcd differs"},
		{"end rt-abc.", "end [deleted:rt-abc]."},
	} {
		t.Run("refs "+tt.in, func(t *testing.T) {
			is := is.New(t)
			got, _ := replaceIDRefs(tt.in, "rt-abc")
			is.Equal(got, tt.want)
		})
	}
}
