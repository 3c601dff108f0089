package beads

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/standin"
	"github.com/ralphd/ralphd/internal/testkit/standin/standintest"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		out, want string // want "" means an error
	}{
		{"bd version 1.0.5 (6a3f515: v1.0.5@6a3f515ced18)\n", "1.0.5"},
		{"bd version 1.0.5 (dev)\n", "1.0.5"},
		{"bd version v1.3.2\n", "1.3.2"},
		{"  bd version 1.3.0-rc.1+build_7 (x)\nmore\n", "1.3.0-rc.1+build_7"},
		{"bd version 1.0.5\r\n", "1.0.5"},
		{"", ""},
		{"beads 1.0.5\n", ""},
		{"bd version\n", ""},
		{"bd version dev\n", ""},
		{"bd version 1.0.5/../../x\n", ""},
		{"bd version ../1.0.5\n", ""},
		{"bd version " + strings.Repeat("1", 65) + "\n", ""},
		{`{"version": "1.0.5"}`, ""},
	} {
		v, err := ParseVersion([]byte(tc.out))
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseVersion(%q) = %q, want an error", tc.out, v.Number)
			}
			continue
		}
		if err != nil || v.Number != tc.want {
			t.Errorf("ParseVersion(%q) = %q, %v; want %q", tc.out, v.Number, err, tc.want)
		}
	}
}

func TestVersionVerified(t *testing.T) {
	is := is.New(t)
	is.True(Version{Number: "1.0.5"}.Verified())
	is.True(!Version{Number: "1.0.50"}.Verified())
	is.True(!Version{Number: "1.3.0"}.Verified())
}

// TestTrustedClaims: a claim's answer stands without a reading after it
// only for a verified bd; 1.0.3's ready --claim was not atomic.
func TestTrustedClaims(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{{"1.0.5", true}, {"1.0.3", false}, {"1.0.4", false}, {"1.3.0", false}, {"", false}} {
		if got := (Version{Number: tc.v}).TrustedClaims(); got != tc.want {
			t.Errorf("Version %q: TrustedClaims() = %v, want %v", tc.v, got, tc.want)
		}
	}
}

var versionNumber = regexp.MustCompile(`^[0-9][0-9A-Za-z.+_-]{0,63}$`)

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"bd version 1.0.5 (6a3f515: v1.0.5@6a3f515ced18)\n", "bd version v2\n", "bd version 1.0.5 (dev)", "", "bd version \xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		v, err := ParseVersion(out)
		if err != nil {
			return
		}
		if !versionNumber.MatchString(v.Number) {
			t.Fatalf("ParseVersion(%q) = %q: not a version number, yet it names a state file", out, v.Number)
		}
		again, err := ParseVersion([]byte("bd version " + v.Number + "\n"))
		if err != nil || again.Number != v.Number {
			t.Fatalf("%q does not read back: %q, %v", v.Number, again.Number, err)
		}
	})
}

// TestContractCasesWellFormed: unique names, a reason each, every name a
// step uses bound before it, and a recording named at most once.
func TestContractCasesWellFormed(t *testing.T) {
	bound := map[string]bool{actor1: true, actor2: true, "missing": true}
	names, fixtures := map[string]bool{}, map[string]bool{}
	uses := func(c ContractCase, s ContractStep) {
		for _, a := range s.Args {
			for _, m := range varRE.FindAllStringSubmatch(a, -1) {
				if !bound[m[1]] {
					t.Errorf("%s: {%s} is used before a step binds it", c.Name, m[1])
				}
			}
		}
		if s.Actor != "" && !bound[s.Actor] {
			t.Errorf("%s: actor %q is not one of the contract's", c.Name, s.Actor)
		}
	}
	for _, c := range ContractCases() {
		if names[c.Name] || c.Name == "" || c.Why == "" {
			t.Errorf("case %q: a name of its own and a reason, please", c.Name)
		}
		names[c.Name] = true
		if c.Fixture != "" {
			if fixtures[c.Fixture] {
				t.Errorf("%s: recording %s named twice", c.Name, c.Fixture)
			}
			fixtures[c.Fixture] = true
		}
		if (c.Run.Args == nil) == (c.Racers == nil) {
			t.Errorf("%s: a case has a Run or Racers, not both", c.Name)
		}
		for _, s := range append(append(slices.Clone(c.Setup), c.Run), c.Racers...) {
			uses(c, s)
			if s.Bind != "" {
				bound[s.Bind] = true
			}
		}
	}
}

// scratchTracker makes a git repository with an initialised stand-in
// tracker and returns a Client for it.
func scratchTracker(t *testing.T, env ...string) *Client {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the stand-in bd")
	}
	bin, err := standintest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	full := append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e"}, env...)
	run(t, full, root, "git", "init", "-q", "repo")
	dir := filepath.Join(root, "repo")
	run(t, full, dir, bin, "init", "--prefix", "nt", "--quiet")
	return &Client{Bin: bin, Dir: dir, Env: full, Timeout: time.Minute}
}

// TestSetNotes restores notes on bd 1.0.5's rules (one call) and on the
// later rules from bd's changelog the stand-in can deviate to (refused
// --notes over notes, --notes "" refused for --clear-notes).
func TestSetNotes(t *testing.T) {
	for _, tc := range []struct {
		deviate   string
		text      string
		wantCalls int64
	}{
		{"", "restored text", 1},
		{"", "", 1},
		{standin.DeviateNotes, "restored text", 4}, // --notes refused, --notes "" refused, --clear-notes, --append-notes
		{standin.DeviateNotes, "", 2},              // --notes "" refused, --clear-notes
	} {
		t.Run(tc.deviate+"/"+tc.text, func(t *testing.T) {
			is := is.New(t)
			c := scratchTracker(t, standin.DeviateEnv+"="+tc.deviate)
			ctx := context.Background()
			created, err := c.Create(ctx, CreateOptions{Title: "Has notes", Notes: "old notes"})
			is.NoErr(err)
			before := c.Calls()
			got, err := c.SetNotes(ctx, created.ID, tc.text)
			is.NoErr(err)
			is.Equal(got.Notes, tc.text)
			is.Equal(c.Calls()-before, tc.wantCalls) // on 1.0.5 a restore costs one call
			read, err := c.Show(ctx, created.ID)
			is.NoErr(err)
			is.Equal(read.Notes, tc.text)
		})
	}
}

func TestSetNotesUnknownIssue(t *testing.T) {
	is := is.New(t)
	c := scratchTracker(t)
	before := c.Calls()
	_, err := c.SetNotes(context.Background(), "nt-zzz", "x")
	is.True(errors.Is(err, ErrIssueNotFound))
	is.Equal(c.Calls()-before, int64(1)) // no fallback for an unknown id
}

// TestClaimStaleIsLost: a claim refused with exit 13 (a later bd's stale
// compare-and-set, from bd's changelog) is a lost race, not an error.
func TestClaimStaleIsLost(t *testing.T) {
	is := is.New(t)
	c := scratchTracker(t, standin.DeviateEnv+"="+standin.DeviateClaimStale)
	ctx := context.Background()
	created, err := c.Create(ctx, CreateOptions{Title: "Contested"})
	is.NoErr(err)
	first := &Client{Bin: c.Bin, Dir: c.Dir, Env: c.Env, Timeout: c.Timeout, Actor: "w1"}
	_, err = first.Claim(ctx, created.ID)
	is.NoErr(err)
	second := &Client{Bin: c.Bin, Dir: c.Dir, Env: c.Env, Timeout: c.Timeout, Actor: "w2"}
	_, err = second.Claim(ctx, created.ID)
	var ee *ExitError
	is.True(errors.As(err, &ee))
	is.Equal(ee.Code, ExitStale)
	res, err := (&Claimer{Tracker: second, Actor: "w2"}).Claim(ctx, created.ID)
	is.NoErr(err)
	is.Equal(res.Outcome, Lost)
}

func TestRefusalOfStale(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want RefusalKind
		ok   bool
	}{
		{&ExitError{Code: ExitStale}, Stale, true},
		{&ExitError{Code: ExitStale, Stderr: "Error claiming x-1: issue already claimed by bob"}, AlreadyClaimed, true},
		{&ExitError{Code: 1}, RefusedNone, false},
		{&ExitError{Code: 12}, RefusedNone, false},
	} {
		r, ok := RefusalOf(tc.err)
		if ok != tc.ok || r.Kind != tc.want {
			t.Errorf("RefusalOf(%v) = %v, %v; want %v, %v", tc.err, r.Kind, ok, tc.want, tc.ok)
		}
	}
}

// TestKeepLease: with a bd that has leases (the stand-in deviating to
// them), a claim's lease is renewed until stop; with bd 1.0.5 nothing is
// started and no bd call is made.
func TestKeepLease(t *testing.T) {
	for _, deviate := range []string{"", standin.DeviateLeases} {
		t.Run("deviate="+deviate, func(t *testing.T) {
			is := is.New(t)
			c := scratchTracker(t, standin.DeviateEnv+"="+deviate)
			ctx := context.Background()
			// The stand-in says 1.0.5, which has no leases; pretend this one
			// was found to have them, as ProbeLeases does for a bd that is
			// not verified and answers `bd heartbeat --help`.
			leases.Store(c.Bin, deviate != "")
			t.Cleanup(func() { leases.Delete(c.Bin) })
			created, err := c.Create(ctx, CreateOptions{Title: "Leased"})
			is.NoErr(err)
			before := c.Calls()
			stop := c.keepLease(ctx, created.ID, 20*time.Millisecond)
			time.Sleep(150 * time.Millisecond)
			stop()
			calls := c.Calls() - before
			log, _ := os.ReadFile(filepath.Join(c.Dir, ".beads", "heartbeats.log"))
			if deviate == "" {
				is.Equal(calls, int64(0))
				is.Equal(len(log), 0)
				return
			}
			is.True(calls >= 2)
			is.True(strings.HasPrefix(string(log), created.ID+" "))
			time.Sleep(60 * time.Millisecond)
			is.Equal(c.Calls()-before, calls) // stop stopped it
		})
	}
}

// TestProbeLeases: bd 1.0.5 (the stand-in) has no leases and costs no
// probe beyond its version; a binary that says another version and
// answers `heartbeat --help` has them.
func TestProbeLeases(t *testing.T) {
	is := is.New(t)
	c := scratchTracker(t)
	is.True(!ProbeLeases(context.Background(), c.Bin))
	dir := t.TempDir()
	fake := filepath.Join(dir, "bd")
	is.NoErr(os.WriteFile(fake, []byte("#!/bin/sh\ncase \"$1\" in version) echo 'bd version 1.3.2 (x)'; exit 0;; heartbeat) exit 0;; esac\nexit 1\n"), 0o755))
	v, err := ReadVersion(context.Background(), fake)
	is.NoErr(err)
	is.True(ProbeLeases(context.Background(), fake))
	is.Equal(v.Number, "1.3.2")
	is.True(!v.Verified())
}

func TestCheckContractNoBD(t *testing.T) {
	_, err := CheckContract(context.Background(), ContractOptions{Bin: filepath.Join(t.TempDir(), "bd")})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("CheckContract without bd: %v, want ErrNotInstalled", err)
	}
}
