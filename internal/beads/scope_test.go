package beads

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/standin/standintest"
)

// scopeFake answers `ready --parent` with a list, and each `update --claim`
// from a per-issue script; it logs every call.
type scopeFake struct {
	ready    []Issue
	readyErr error
	claims   map[string][]error // per issue: nil is a won claim
	shows    map[string]Issue
	log      []string
	parent   string
}

func (f *scopeFake) Ready(ctx context.Context, opts ReadyOptions) ([]Issue, error) {
	f.log = append(f.log, "ready")
	f.parent = opts.Parent
	return f.ready, f.readyErr
}

func (f *scopeFake) Claim(ctx context.Context, id string) (Issue, error) {
	f.log = append(f.log, "claim "+id)
	script := f.claims[id]
	if len(script) == 0 {
		return Issue{}, fmt.Errorf("no claim scripted for %s", id)
	}
	err := script[0]
	f.claims[id] = script[1:]
	if err != nil {
		return Issue{}, err
	}
	return Issue{ID: id, Status: StatusInProgress, Assignee: actor}, nil
}

func (f *scopeFake) ReadyClaim(ctx context.Context, _ ClaimFilter) (Issue, bool, error) {
	f.log = append(f.log, "ready --claim")
	return Issue{}, false, nil
}

func (f *scopeFake) Show(ctx context.Context, id string) (Issue, error) {
	f.log = append(f.log, "show "+id)
	is, ok := f.shows[id]
	if !ok {
		return Issue{}, fmt.Errorf("no show scripted for %s", id)
	}
	return is, nil
}

func (f *scopeFake) Release(ctx context.Context, id string) (Issue, error) {
	return Issue{}, errors.New("a claim never releases")
}

func held(id string) error {
	return exitErr("", "Error claiming "+id+": issue already claimed by ralphd/other/w2\n")
}

func serializationOn(id string) error {
	return exitErr("", "Error claiming "+id+": dolt commit: Error 1213 (40001): serialization failure: x\n")
}

func open(id string, labels ...string) Issue {
	return Issue{ID: id, Status: StatusOpen, Labels: labels}
}

func mineAs(id string) Issue {
	return Issue{ID: id, Status: StatusInProgress, Assignee: actor}
}

func TestNextIn(t *testing.T) {
	for _, c := range []struct {
		name    string
		ready   []Issue
		claims  map[string][]error
		shows   map[string]Issue
		want    ClaimOutcome
		issue   string
		tries   int
		log     string
		wantErr string
		trusted []string // nil: no inScope check
	}{
		{name: "first candidate won and read back",
			ready: []Issue{open("e.1"), open("e.2")}, claims: map[string][]error{"e.1": {nil}},
			shows: map[string]Issue{"e.1": mineAs("e.1")},
			want:  Won, issue: "e.1", tries: 1, log: "ready, claim e.1, show e.1"},
		{name: "a lost race tries the next candidate",
			ready:  []Issue{open("e.1"), open("e.2")},
			claims: map[string][]error{"e.1": {held("e.1")}, "e.2": {nil}},
			shows:  map[string]Issue{"e.2": mineAs("e.2")},
			want:   Won, issue: "e.2", tries: 2, log: "ready, claim e.1, claim e.2, show e.2"},
		{name: "a read-back showing another holder tries the next candidate",
			ready:  []Issue{open("e.1"), open("e.2")},
			claims: map[string][]error{"e.1": {nil}, "e.2": {nil}},
			shows: map[string]Issue{
				"e.1": {ID: "e.1", Status: StatusInProgress, Assignee: "ralphd/other/w2"},
				"e.2": mineAs("e.2")},
			want: Won, issue: "e.2", tries: 2, log: "ready, claim e.1, show e.1, claim e.2, show e.2"},
		{name: "assigned and stuck candidates are passed over",
			ready: []Issue{
				{ID: "e.1", Status: StatusOpen, Assignee: "someone"},
				{ID: "e.2", Status: StatusOpen, Assignee: actor}, // ready --claim skips the actor's own too
				open("e.3", "x", "ralph:stuck"),
				open("e.4", "x")},
			claims: map[string][]error{"e.4": {nil}},
			shows:  map[string]Issue{"e.4": mineAs("e.4")},
			want:   Won, issue: "e.4", tries: 1, log: "ready, claim e.4, show e.4"},
		{name: "serialization failures are retried on the same candidate",
			ready:  []Issue{open("e.1"), open("e.2")},
			claims: map[string][]error{"e.1": {serializationOn("e.1"), nil}},
			shows:  map[string]Issue{"e.1": mineAs("e.1")},
			want:   Won, issue: "e.1", tries: 2, log: "ready, claim e.1, claim e.1, show e.1"},
		{name: "every candidate lost is empty, not an error",
			ready:  []Issue{open("e.1"), open("e.2")},
			claims: map[string][]error{"e.1": {held("e.1")}, "e.2": {exitErr("", "Error claiming e.2: issue not claimable: status closed\n")}},
			want:   Empty, tries: 2, log: "ready, claim e.1, claim e.2"},
		{name: "a candidate still losing serialization races makes it busy",
			ready:  []Issue{open("e.1"), open("e.2")},
			claims: map[string][]error{"e.1": {serializationOn("e.1"), serializationOn("e.1")}, "e.2": {held("e.2")}},
			want:   Busy, tries: 3, log: "ready, claim e.1, claim e.1, claim e.2"},
		{name: "an issue moved into the scope behind ralphd's back is passed over",
			ready:   []Issue{open("t-x"), open("e.1")},
			claims:  map[string][]error{"e.1": {nil}},
			shows:   map[string]Issue{"e.1": mineAs("e.1")},
			trusted: []string{"e.1"},
			want:    Won, issue: "e.1", tries: 1, log: "ready, claim e.1, show e.1"},
		{name: "only issues moved into the scope is empty with no claim",
			ready:   []Issue{open("t-x")},
			trusted: []string{"e.1"},
			want:    Empty, tries: 0, log: "ready"},
		{name: "nothing ready in scope is empty with no claim",
			want: Empty, tries: 0, log: "ready"},
		{name: "only stuck work in scope is empty with no claim",
			ready: []Issue{open("e.1", "ralph:stuck")},
			want:  Empty, tries: 0, log: "ready"},
		{name: "another bd failure while claiming is an error",
			ready:   []Issue{open("e.1"), open("e.2")},
			claims:  map[string][]error{"e.1": {exitErr("", "Error: no beads database found")}},
			log:     "ready, claim e.1",
			wantErr: "no beads database found"},
		{name: "a read-back failure is an error",
			ready:   []Issue{open("e.1")},
			claims:  map[string][]error{"e.1": {nil}},
			log:     "ready, claim e.1, show e.1",
			wantErr: "read back e.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			f := &scopeFake{ready: c.ready, claims: c.claims, shows: c.shows}
			cl := &Claimer{Tracker: f, Actor: actor, MaxTries: 2, ExcludeLabels: []string{"ralph:stuck"},
				Sleep: func(context.Context, time.Duration) error { return nil }}
			var inScope func(Issue) bool
			if c.trusted != nil {
				inScope = func(is Issue) bool { return slices.Contains(c.trusted, is.ID) }
			}
			res, err := cl.NextIn(context.Background(), "e", inScope)
			is.Equal(strings.Join(f.log, ", "), c.log)
			is.Equal(f.parent, "e") // the list is the scope's
			if c.wantErr != "" {
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), c.wantErr)) // names what failed
				return
			}
			is.NoErr(err)
			is.Equal(res.Outcome, c.want)
			is.Equal(res.Issue.ID, c.issue)
			is.Equal(res.Tries, c.tries)
			if c.want == Won {
				is.True(Holds(res.Issue, actor))
			}
		})
	}
}

func TestDescendants(t *testing.T) {
	issues := func(pairs ...string) map[string]Issue { // id, parent, id, parent, ...
		m := map[string]Issue{}
		for i := 0; i+1 < len(pairs); i += 2 {
			m[pairs[i]] = Issue{ID: pairs[i], Parent: pairs[i+1]}
		}
		return m
	}
	for _, c := range []struct {
		name   string
		issues map[string]Issue
		root   string
		want   []string
	}{
		{"children and grandchildren", issues("e", "", "e.1", "e", "e.2", "e", "e.1.1", "e.1", "x", "", "x.1", "x"), "e", []string{"e.1", "e.1.1", "e.2"}},
		{"a leaf has none", issues("e", "", "e.1", "e"), "e.1", nil},
		{"an unknown root has none", issues("e", "", "e.1", "e"), "nope", nil},
		{"a child whose parent is missing still counts", issues("e.1", "e"), "e", []string{"e.1"}},
		{"a parent cycle ends", issues("a", "b", "b", "a", "c", "a"), "a", []string{"b", "c"}},
		{"no issues", nil, "e", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			got := slices.Sorted(maps.Keys(Descendants(c.issues, c.root)))
			is.Equal(len(got), len(c.want))
			for i := range c.want {
				is.Equal(got[i], c.want[i])
			}
		})
	}
}

func TestNextInListFailure(t *testing.T) {
	is := is.New(t)
	f := &scopeFake{readyErr: exitErr(`{"error": "resolving parent e: no issue found matching \"e\"", "schema_version": 1}`, "")}
	_, err := (&Claimer{Tracker: f, Actor: actor}).NextIn(context.Background(), "e", nil)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "list the ready work in e"))
	is.True(strings.Contains(err.Error(), "no issue found"))
	is.Equal(f.log, []string{"ready"})
}

func TestNextInWithoutScopeIsNext(t *testing.T) {
	is := is.New(t)
	f := &scopeFake{}
	res, err := (&Claimer{Tracker: f, Actor: actor}).NextIn(context.Background(), "", nil)
	is.NoErr(err)
	is.Equal(res.Outcome, Empty)
	is.Equal(f.log, []string{"ready --claim"})
}

func TestNextInNeedsALister(t *testing.T) {
	is := is.New(t)
	_, err := (&Claimer{Tracker: &fakeTracker{}, Actor: actor}).NextIn(context.Background(), "e", nil)
	is.True(err != nil)
	_, err = (&Claimer{Tracker: &scopeFake{}}).NextIn(context.Background(), "e", nil)
	is.True(err != nil) // no actor
}

// TestNextInGarbage runs a real beads.Client against a bd that prints
// garbage: the claim fails with an error that says what bd printed.
func TestNextInGarbage(t *testing.T) {
	for _, c := range []struct {
		name, script, want string
	}{
		{"ready prints garbage", `echo 'not json{'`, "list the ready work in e"},
		{"update --claim prints garbage", `case "$*" in
*" ready "*) echo '[{"id":"e.1","status":"open","priority":2,"title":"t"}]';;
*) echo '[{"id":';;
esac`, "bd update e.1 --claim"},
		{"update --claim claims two issues", `case "$*" in
*" ready "*) echo '[{"id":"e.1","status":"open","priority":2,"title":"t"}]';;
*) echo '[{"id":"e.1","priority":2},{"id":"e.2","priority":2}]';;
esac`, "want one issue, got 2"},
		{"a flag-like id is never passed to bd", `case "$*" in
*" ready "*) echo '[{"id":"--status=closed","status":"open","priority":2,"title":"t"}]';;
*) echo '[]';;
esac`, "invalid issue id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			bin := filepath.Join(t.TempDir(), "bd")
			calls := filepath.Join(t.TempDir(), "calls")
			is.NoErr(os.WriteFile(bin, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"+c.script+"\n"), 0o755))
			client := &Client{Bin: bin, Dir: t.TempDir(), Actor: actor, Timeout: 30 * time.Second}
			res, err := (&Claimer{Tracker: client, Actor: actor}).NextIn(context.Background(), "e", nil)
			is.True(err != nil)
			t.Log(err)
			is.True(strings.Contains(err.Error(), c.want))
			is.True(res.Outcome != Won)
			log, err := os.ReadFile(calls)
			is.NoErr(err)
			is.True(!strings.Contains(string(log), "--status")) // nothing bd printed became a flag
		})
	}
}

// TestNextInOverStandin races 6 scoped claimers over the stand-in bd with
// its serialization failures switched on: every ready child of the epic is
// worked exactly once, and nothing outside it (nor the stuck child, nor
// the epic itself) is touched.
func TestNextInOverStandin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the stand-in bd")
	}
	bin, err := standintest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	is := is.New(t)
	root := t.TempDir()
	env := []string{"HOME=" + root, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"BD_STANDIN_CONFLICTS=1", "BD_STANDIN_TXN_WINDOW=5ms"}
	run(t, env, root, "git", "init", "-q")
	run(t, env, root, bin, "init", "--prefix", "sc", "--quiet")
	create := func(args ...string) string {
		return strings.TrimSpace(run(t, env, root, bin, append([]string{"create"}, append(args, "--silent")...)...))
	}
	epic := create("Epic", "--type", "epic")
	children := map[string]bool{}
	for i := 0; i < 10; i++ {
		children[create(fmt.Sprintf("Child %d", i), "--parent", epic)] = true
	}
	stuck := create("Stuck child", "--parent", epic, "--labels", "ralph:stuck")
	var outside []string
	for i := 0; i < 5; i++ {
		outside = append(outside, create(fmt.Sprintf("Outside %d", i), "-p", "0"))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	worked := map[string][]string{}
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actor := fmt.Sprintf("ralphd/host/w%d", w)
			client := &Client{Bin: bin, Dir: root, Env: env, Actor: actor, Timeout: time.Minute}
			cl := &Claimer{Tracker: client, Actor: actor, BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond,
				ExcludeLabels: []string{"ralph:stuck"}}
			for {
				res, err := cl.NextIn(ctx, epic, nil)
				if err != nil {
					t.Errorf("%s: %v", actor, err)
					return
				}
				switch res.Outcome {
				case Empty:
					return
				case Busy:
					continue
				case Won:
				default:
					t.Errorf("%s: unexpected outcome %v", actor, res.Outcome)
					return
				}
				mu.Lock()
				worked[res.Issue.ID] = append(worked[res.Issue.ID], actor)
				mu.Unlock()
				if _, err := client.Close(ctx, res.Issue.ID, "done"); err != nil {
					t.Errorf("%s: close: %v", actor, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for id, ws := range worked {
		is.True(children[id]) // only the epic's children
		if len(ws) != 1 {
			t.Errorf("%s worked by %v", id, ws) // never twice
		}
	}
	is.Equal(len(worked), len(children)) // every child worked
	client := &Client{Bin: bin, Dir: root, Env: env, Timeout: time.Minute}
	left, err := client.ShowMany(ctx, append([]string{epic, stuck}, outside...)...)
	is.NoErr(err)
	for _, x := range left {
		is.Equal(x.Status, StatusOpen) // untouched
		is.Equal(x.Assignee, "")
	}
}
