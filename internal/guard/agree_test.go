package guard

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/testkit/standin/standintest"
)

// The guard and the tamper judgement read one rule table, so they must
// agree: whatever argv the guard allows in BUILD, run on the stand-in bd,
// leaves no change the judgement reverts. Both judge as for an iteration
// on T: the guard with its Powers, the judgement with Options.Own. The tests below check that over
// hand-picked spellings (the fuzz seeds), over argvs generated from bd's
// vocabulary, and, under `go test -fuzz`, over any argv.

// agreeSeeds are spellings that once got through, or might: options
// hidden after `--`, joined and prefixed forms, ralphd's own label, and
// the status changes BUILD may make, reopening included. "T" is the
// worked issue, "P" another open one, "C" a closed one.
var agreeSeeds = [][]string{
	{"update", "T", "--", "--priority", "0"},
	{"update", "--", "T", "--priority", "0"},
	{"--", "update", "T", "--priority", "0"},
	{"update", "T", "-p0"},
	{"update", "T", "--priority=0"},
	{"update", "T", "--pri", "0"},
	{"update", "T", "--prio=0"},
	{"update", "T", "-sp", "0"},
	{"update", "T", "--status", "deferred"},
	{"update", "T", "--status=open", "--", "--status", "closed"},
	{"update", "T", "--title", "x"},
	{"update", "T", "--add-label", "x,ralph:stuck"},
	{"update", "T", "--add-label", "ralph:stuck-not"},
	{"label", "add", "T", "ralph:stuck"},
	{"label", "add", "T", " Ralph:Stuck "},
	{"label", "add", "T", "fine"},
	{"update", "T", "--status", "blocked", "--append-notes", "waiting"},
	{"update", "T", "--claim"},
	{"--actor", "someone-else", "update", "T", "--claim"},
	{"update", "T", "--assignee", ""},
	{"assign", "T", "bob"},
	{"update", "C", "--status", "open"},
	{"update", "C", "--status", "in_progress"},
	{"reopen", "C"},
	{"reopen", "C", "--reason", "regressed"},
	{"close", "T", "--reason", "go test ./... passes (exit 0)"},
	{"close", "C", "--reason", "a new reason"},
	{"close", "T", "--reason", " "},
	{"close", "T", "--reason", "done", "--claim-next"},
	{"dep", "add", "T", "P"},
	{"dep", "add", "T", "P", "--type", "parent-child"},
	{"dep", "add", "P", "T", "--type", "related"},
	{"dep", "T", "--blocks", "P"},
	{"dep", "relate", "T", "P"},
	{"link", "T", "P", "--type", "parent-child"},
	{"create", "child", "--parent", "T", "-p", "0"},
	{"create", "x", "--deps", "parent-child:T"},
	{"create", "x", "--deps", "blocks:T"},
	{"create", "x", "-l", "ralph:stuck"},
	{"q", "y", "-p", "0", "-t", "epic"},
	{"comments", "add", "T", "a comment"},
	{"note", "T", "a note"},
	{"update", "T", "--notes", ""},
	{"update", "T", "--description", "new text", "--design", "d"},
	{"--sandbox", "--readonly", "update", "T", "--append-notes", "x"},
	{"--dolt-auto-commit", "off", "update", "T", "--status", "in_progress"},
	{"delete", "T", "--force"},
	{"dep", "remove", "T", "P"},
	{"edit", "T"},
	{"sql", "UPDATE issues SET priority = 0"},
	{"import", "-i", "x.jsonl"},
	{"config", "set", "import.auto", "true"},
	// Issue 30: status, assignee and claim of other issues, closing them,
	// claims of whatever is ready, and creations above T's priority.
	{"update", "P", "--status", "blocked"},
	{"update", "P", "--status", "in_progress", "--assignee", "ghost"},
	{"update", "P", "--claim"},
	{"update", "P", "-a", "ghost"},
	{"update", "P", "--append-notes", "P looks blocked"},
	{"update", "T", "P", "--status", "blocked"},
	{"update", "--status", "blocked"},
	{"update", "tp", "--status", "blocked"},
	{"assign", "P", "ghost"},
	{"close", "P", "--reason", "go test ./... passes (exit 0)"},
	{"close", "T", "P", "--reason", "go test ./... passes (exit 0)"},
	{"close", "T", "--reason", "go test ./... passes (exit 0)", "--claim-next"},
	{"ready", "--claim"},
	{"reopen", "P"},
	{"update", "C", "--status", "blocked"},
	{"create", "urgent", "-p", "1"},
	{"create", "urgent", "-p", "P0"},
	{"create", "later", "-p", "3"},
	{"create", "plain"},
	{"q", "quick", "--priority=0"},
}

// agreeTracker holds a seeded tracker to copy for each argv: the worked
// issue T (labelled, with comments and a dependency on P), P, and a
// closed issue C.
type agreeTracker struct {
	bin, dir string
	env      []string
	ids      map[string]string
	before   Snapshot
}

func newAgreeTracker(t testing.TB) *agreeTracker {
	t.Helper()
	bin, err := standintest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	bd, target, other := seed(t, bin)
	ctx := context.Background()
	p := 3
	closed, err := bd.Create(ctx, beads.CreateOptions{Title: "done before", Priority: &p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bd.Close(ctx, closed.ID, "go test ./... passes (exit 0)"); err != nil {
		t.Fatal(err)
	}
	return &agreeTracker{
		bin: bin, dir: bd.Dir, env: bd.Env,
		ids:    map[string]string{"T": target, "P": other, "C": closed.ID},
		before: snap(t, bd),
	}
}

// run runs argv (with T, P and C standing for the seeded issues) through
// the guard's decision, and when the guard allows it, on a copy of the
// tracker; it returns the tracker after it and what the judgement would
// revert.
func (a *agreeTracker) run(t testing.TB, argv []string) (Decision, Snapshot, []Violation) {
	t.Helper()
	args := make([]string, len(argv))
	for i, w := range argv {
		args[i] = w
		if id, ok := a.ids[w]; ok {
			args[i] = id
		}
	}
	d := a.powers().judge(Decide(ModeBuild, args))
	if !d.Allowed {
		return d, nil, nil
	}
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(dir, os.DirFS(a.dir)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.bin, args...)
	cmd.Dir, cmd.Env = dir, a.env
	_ = cmd.Run() // what bd says does not matter, only what it changed
	bd := &beads.Client{Bin: a.bin, Dir: dir, Env: a.env, Timeout: time.Minute}
	after := snap(t, bd)
	return d, after, Diff(a.before, after, Options{Own: a.ids["T"]})
}

// powers are the guard's powers for an iteration on T.
func (a *agreeTracker) powers() *Powers {
	t := a.ids["T"]
	return &Powers{Own: t, OwnPriority: a.before[t].Priority, Before: a.before, MaxCreates: 10}
}

func (a *agreeTracker) check(t testing.TB, argv []string) bool {
	t.Helper()
	d, _, vs := a.run(t, argv)
	for _, v := range vs {
		t.Errorf("the guard allows `%s` (rule %s), but the judgement reverts what it did: %s (rule %q)",
			d.CommandLine(), d.Rule, v, v.Rule)
	}
	return d.Allowed
}

func TestGuardAllowsNothingTamperReverts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the stand-in bd")
	}
	a := newAgreeTracker(t)
	allowed := 0
	for _, argv := range agreeSeeds {
		if a.check(t, argv) {
			allowed++
		}
	}
	// The seeds are not all refused: the property must be tried on calls
	// that change the tracker.
	if allowed < len(agreeSeeds)/3 {
		t.Errorf("only %d of %d seeds allowed; the seeds no longer try what BUILD may do", allowed, len(agreeSeeds))
	}
}

// Reopening is BUILD's, as a status change (guard.RuleReopen): the guard
// allows `bd reopen` of any closed issue, it does reopen, and the
// judgement does not revert it. The BUILD prompt says so. `bd update
// --status open` reopens too, but as a status change of another issue it
// is refused (RuleOtherIssue): there it is the same spelling that would
// release another's claim.
func TestReopenIsAllowedAndNotReverted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the stand-in bd")
	}
	a := newAgreeTracker(t)
	if d, _, _ := a.run(t, []string{"update", "C", "--status", "open"}); d.Allowed || d.Rule != RuleOtherIssue {
		t.Errorf("`%s`: allowed %v (rule %s); want refused by %s", d.CommandLine(), d.Allowed, d.Rule, RuleOtherIssue)
	}
	for _, argv := range [][]string{{"reopen", "C", "--reason", "regressed"}, {"reopen", "C"}} {
		d, after, vs := a.run(t, argv)
		if !d.Allowed || after[a.ids["C"]].Status != beads.StatusOpen || len(vs) != 0 {
			t.Errorf("`%s`: allowed %v (rule %s), status after %q, reverted %v; want allowed, open, nothing reverted",
				d.CommandLine(), d.Allowed, d.Rule, after[a.ids["C"]].Status, vs)
		}
	}
}

// genWords is bd's vocabulary for generated argvs: commands BUILD may run
// and some it may not, flags in every spelling pflag takes (and every
// protected field's flags, from the table), and values that matter to the
// rules (and every protected field's sample).
var genWords = struct{ cmds, flags, values [][]string }{
	cmds: [][]string{
		{"update"}, {"update"}, {"update"}, {"create"}, {"q"}, {"label", "add"}, {"assign"}, {"dep", "add"}, {"dep"},
		{"dep", "relate"}, {"link"}, {"close"}, {"close"}, {"reopen"}, {"note"}, {"comments", "add"}, {"comment"},
		{"show"}, {"ready"}, {"priority"}, {"label", "remove"}, {"dep", "remove"}, {"delete"}, {"defer"},
		{"update", "P"}, {"close", "P"}, {"assign", "P"}, {"reopen", "P"}, {"update", "C"},
	},
	flags: withProtectedWords([][]string{
		{"--status"}, {"-s"}, {"--priority"}, {"-p"}, {"-p0"}, {"--priority=0"}, {"--pri"}, {"--title"},
		{"--add-label"}, {"--labels"}, {"-l"}, {"--type"}, {"-t"}, {"--parent"}, {"--claim"}, {"--assignee"},
		{"-a"}, {"--notes"}, {"--append-notes"}, {"-d"}, {"--design"}, {"--acceptance"}, {"--reason"}, {"-r"},
		{"--force"}, {"-f"}, {"--blocks"}, {"-b"}, {"--defer"}, {"--due"}, {"--json"}, {"-q"}, {"--actor"},
		{"--sandbox"}, {"--"}, {"--remove-label"}, {"--set-labels"}, {"-e"}, {"--external-ref"},
		{"--no-cycle-check"}, {"--claim-next"}, {"--deps"}, {"--no-inherit-labels"}, {"--depends-on"},
		{"--blocked-by"}, {"--status=closed"}, {"-sclosed"}, {"--add-label=ralph:stuck"}, {"-lralph:stuck"},
		{"--type=parent-child"}, {"--status=open"}, {"-sblocked"}, {"--claim-next"}, {"-p1"}, {"-p3"},
	}, func(f protectedField) []string {
		var out []string
		for _, flag := range f.updateFlags() {
			out = append(out, "--"+flag)
		}
		return out
	}),
	values: withProtectedWords([][]string{
		{"T"}, {"T"}, {"P"}, {"C"}, {"tp-zzz"}, {"0"}, {"4"}, {"closed"}, {"open"}, {"in_progress"}, {"blocked"},
		{"deferred"}, {"pinned"}, {"ralph:stuck"}, {"x,ralph:stuck"}, {"keep"}, {"parent-child"}, {"blocks"},
		{"related"}, {"2031-01-01"}, {"a title"}, {"bug"}, {""}, {"tests pass (exit 0)"}, {" "}, {"true"},
		{"parent-child:T"}, {"blocks:P"},
	}, func(f protectedField) []string { return []string{f.sample} }),
}

// withProtectedWords adds to words the words of every protected field
// with flags that it lacks.
func withProtectedWords(words [][]string, of func(protectedField) []string) [][]string {
	for _, f := range protectedFields {
		if !f.scalar() {
			continue
		}
		for _, w := range of(f) {
			if !slices.ContainsFunc(words, func(x []string) bool { return len(x) == 1 && x[0] == w }) {
				words = append(words, []string{w})
			}
		}
	}
	return words
}

// genArgv builds one argv from genWords: a command, then a few flags and
// values in any order.
func genArgv(r *rand.Rand) []string {
	pick := func(ws [][]string) []string { return ws[r.IntN(len(ws))] }
	argv := append([]string(nil), pick(genWords.cmds)...)
	for n := r.IntN(6); n > 0; n-- {
		switch r.IntN(5) {
		case 0, 1:
			argv = append(argv, pick(genWords.values)...)
		case 2:
			argv = append(argv, pick(genWords.flags)...)
		default:
			argv = append(argv, pick(genWords.flags)...)
			argv = append(argv, pick(genWords.values)...)
		}
	}
	return argv
}

func TestGuardAllowsNothingTamperRevertsGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the stand-in bd")
	}
	a := newAgreeTracker(t)
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(19, seed))
	allowed := 0
	for tries := 0; allowed < 60 && tries < 2000; tries++ {
		argv := genArgv(r)
		if a.check(t, argv) {
			allowed++
		}
		if t.Failed() {
			t.Fatalf("argv %q (generator seed %d)", argv, seed)
		}
	}
	if allowed < 60 {
		t.Errorf("only %d generated argvs were allowed", allowed)
	}
}

// FuzzGuardAllowsNothingTamperReverts tries any argv (words split at
// NUL; T, P and C stand for the seeded issues).
func FuzzGuardAllowsNothingTamperReverts(f *testing.F) {
	for _, argv := range agreeSeeds {
		f.Add(strings.Join(argv, "\x00"))
	}
	r := rand.New(rand.NewPCG(19, 5))
	for range 20 {
		f.Add(strings.Join(genArgv(r), "\x00"))
	}
	if testing.Short() {
		f.Skip("runs the stand-in bd")
	}
	a := newAgreeTracker(f)
	f.Fuzz(func(t *testing.T, words string) {
		a.check(t, strings.Split(words, "\x00"))
	})
}
