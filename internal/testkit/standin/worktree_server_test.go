package standin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
)

// worktreeRepo makes an initialised repo with two linked worktrees, wa
// inside it and wb outside, as in claim-race-worktrees.txt.
func worktreeRepo(t *testing.T) (s *scratch, wa, wb string) {
	t.Helper()
	s = initRepo(t)
	s.git(s.repo, "add", "-A")
	s.git(s.repo, "commit", "-q", "-m", "bd init")
	wa, wb = filepath.Join(s.repo, "wa"), filepath.Join(s.root, "wb")
	s.git(s.repo, "worktree", "add", "-q", "-b", "wa", wa)
	s.git(s.repo, "worktree", "add", "-q", "-b", "wb", wb)
	return s, wa, wb
}

// race runs n bd calls at once; call i runs in dirs[i%len(dirs)].
func race(s *scratch, n int, dirs []string, args func(i int) []string) []result {
	var wg sync.WaitGroup
	out := make([]result, n)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = s.bd(dirs[i%len(dirs)], args(i)...)
		}()
	}
	wg.Wait()
	return out
}

// TestClaimRaceWorktrees follows claim-race-worktrees.txt: 8 racers split
// over two worktrees share the main repo's tracker; `ready --claim` gives
// each a different issue, with [] for the losers when work is scarce, and
// `update --claim` on one issue has exactly one winner.
func TestClaimRaceWorktrees(t *testing.T) {
	s, wa, wb := worktreeRepo(t)
	dirs := []string{wa, wb}
	for i := 0; i < 5; i++ {
		s.createID(fmt.Sprintf("Race issue %d", i+1))
	}
	t.Run("ready --claim, scarce work", func(t *testing.T) {
		is := is.New(t)
		results := race(s, 8, dirs, func(i int) []string {
			return []string{"ready", "--claim", "--json", "--actor", fmt.Sprintf("w%d", i+1)}
		})
		got := map[string]bool{}
		empty := 0
		for _, r := range results {
			is.Equal(r.code, 0)    // losers exit 0 too
			is.Equal(r.stderr, "") // silently
			var items []struct{ ID string }
			is.NoErr(json.Unmarshal([]byte(r.stdout), &items))
			if len(items) == 0 {
				empty++
				continue
			}
			is.True(!got[items[0].ID]) // never double-given
			got[items[0].ID] = true
		}
		is.Equal(len(got), 5)
		is.Equal(empty, 3)
	})
	t.Run("update --claim", func(t *testing.T) {
		is := is.New(t)
		target := s.createID("One target")
		results := race(s, 8, dirs, func(i int) []string {
			return []string{"update", target, "--claim", "--json", "--actor", fmt.Sprintf("w%d", i+1)}
		})
		winner := ""
		for i, r := range results {
			if r.code == 0 {
				is.Equal(winner, "") // one winner
				winner = fmt.Sprintf("w%d", i+1)
			}
		}
		is.True(winner != "")
		for _, r := range results {
			if r.code != 0 {
				is.Equal(r.code, 1)
				is.Equal(r.stderr, fmt.Sprintf("Error claiming %s: issue already claimed by %s\n", target, winner))
			}
		}
	})
}

// serverClones sets up the stand-in's server and two clones sharing it,
// as in server-setup-summary.txt.
func serverClones(t *testing.T) (s *scratch, a, b string) {
	t.Helper()
	s = newScratch(t)
	s.runner = Runner{}
	s.baseEnv = append(s.baseEnv, serverRootEnv+"="+filepath.Join(s.root, "servers"))
	a, b = filepath.Join(s.root, "clone-a"), filepath.Join(s.root, "clone-b")
	if err := os.MkdirAll(serverDirOf(s), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(a, 0o755); err != nil {
		t.Fatal(err)
	}
	s.git(a, "init", "-q")
	if r := s.bd(a, "init", "--prefix", "sv", "--quiet", "--server", "--server-host", "127.0.0.1", "--server-port", testPort, "--external"); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	s.git(a, "add", "-A")
	s.git(a, "commit", "-q", "-m", "bd init")
	s.git(s.root, "clone", "-q", a, b)
	return s, a, b
}

// TestServerModeSharedStore: a clone needs no set-up, sees the other's
// issues at once, and claims stay exclusive across clones.
func TestServerModeSharedStore(t *testing.T) {
	is := is.New(t)
	s, a, b := serverClones(t)
	meta, err := os.ReadFile(filepath.Join(b, ".beads", "metadata.json"))
	is.NoErr(err)
	var m metadata
	is.NoErr(json.Unmarshal(meta, &m))
	is.Equal(m.DoltMode, "server") // the committed metadata carries the mode
	is.Equal(m.DoltDatabase, "sv")

	id := s.createIDIn(a, "Created on machine A")
	r := s.bd(b, "show", id, "--json")
	is.Equal(r.code, 0) // clone-b sees it with no bd init

	r = s.bd(b, "update", id, "--claim", "--json", "--actor", "bob")
	is.Equal(r.code, 0)
	r = s.bd(a, "update", id, "--claim", "--json", "--actor", "alice")
	is.Equal(r.code, 1)
	is.Equal(r.stderr, fmt.Sprintf("Error claiming %s: issue already claimed by bob\n", id))
	for _, d := range []string{a, b} {
		_, err := os.Stat(filepath.Join(d, ".beads", "embeddeddolt"))
		is.True(os.IsNotExist(err)) // no clone keeps data of its own
	}
}

// TestServerModeConflicts follows claim-race-server.txt: racing claims in
// server mode never go to two claimants; losers fail with Dolt's
// serialization failure and exit 1, and retrying gets everyone a distinct
// issue. BD_STANDIN_CONFLICTS=1 gives embedded mode the same losing side.
func TestServerModeConflicts(t *testing.T) {
	const failure = `{
  "error": "dolt commit: Error 1213 (40001): serialization failure: this transaction conflicts with a committed transaction from another client, try restarting transaction.",
  "schema_version": 1
}
`
	type setup struct {
		name string
		make func(t *testing.T) (*scratch, []string)
	}
	for _, c := range []setup{
		{"server mode, two clones", func(t *testing.T) (*scratch, []string) {
			s, a, b := serverClones(t)
			return s, []string{a, b}
		}},
		{"embedded with the switch", func(t *testing.T) (*scratch, []string) {
			s := initRepo(t)
			s.baseEnv = append(s.baseEnv, conflictsEnv+"=1")
			return s, []string{s.repo}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			s, dirs := c.make(t)
			s.baseEnv = append(s.baseEnv, txnWindowEnv+"=300ms") // wide enough that racers overlap on a loaded machine
			for i := 0; i < 8; i++ {
				s.createIDIn(dirs[0], fmt.Sprintf("Race issue %d", i+1))
			}
			claimedBy := map[string]string{}
			pending := []int{0, 1, 2, 3, 4, 5, 6, 7}
			conflicts := 0
			for round := 0; len(pending) > 0 && round < 30; round++ {
				results := race(s, len(pending), dirs, func(i int) []string {
					return []string{"ready", "--claim", "--json", "--actor", fmt.Sprintf("w%d", pending[i])}
				})
				var next []int
				for i, r := range results {
					if r.code != 0 {
						is.Equal(r.code, 1)
						is.Equal(r.stdout, failure) // the recorded losing side
						is.Equal(strings.Contains(r.stderr, "Error"), false)
						conflicts++
						next = append(next, pending[i])
						continue
					}
					var items []struct{ ID, Assignee string }
					is.NoErr(json.Unmarshal([]byte(r.stdout), &items))
					is.Equal(len(items), 1)
					_, dup := claimedBy[items[0].ID]
					is.True(!dup) // never two claimants
					claimedBy[items[0].ID] = items[0].Assignee
				}
				pending = next
			}
			is.Equal(len(pending), 0)   // retrying got everyone an issue
			is.Equal(len(claimedBy), 8) // all distinct
			is.True(conflicts > 0)      // the race was real: some lost it
			r := s.bd(dirs[0], "list", "--status", "in_progress", "--json")
			var list []struct{ ID, Assignee string }
			is.NoErr(json.Unmarshal([]byte(r.stdout), &list))
			is.Equal(len(list), 8)
			for _, it := range list {
				is.Equal(claimedBy[it.ID], it.Assignee) // the store agrees with what each racer was told
			}
		})
	}
	t.Run("update --claim loser", func(t *testing.T) {
		is := is.New(t)
		s := initRepo(t)
		s.baseEnv = append(s.baseEnv, conflictsEnv+"=1", txnWindowEnv+"=1s") // wide enough that 4 racers overlap on a loaded machine
		id := s.createID("One target")
		results := race(s, 4, []string{s.repo}, func(i int) []string {
			return []string{"update", id, "--claim", "--json", "--actor", fmt.Sprintf("w%d", i)}
		})
		wins, conflicts := 0, 0
		for _, r := range results {
			if r.code == 0 {
				wins++
				continue
			}
			is.Equal(r.code, 1)
			is.Equal(r.stdout, "")
			// As recorded, a loser gets either message: the serialization
			// failure when it raced, "already claimed" when it started late.
			if r.stderr != "Error claiming "+id+": "+serializationFailure+"\n" {
				is.True(strings.HasPrefix(r.stderr, "Error claiming "+id+": issue already claimed by w"))
			} else {
				conflicts++
			}
		}
		is.Equal(wins, 1)
		is.True(conflicts > 0) // the race was real
	})
	t.Run("server down", func(t *testing.T) {
		is := is.New(t)
		s, _, b := serverClones(t)
		is.NoErr(os.Rename(serverDirOf(s), serverDirOf(s)+".stopped"))
		r := s.bd(b, "ready", "--claim", "--json", "--actor", "w1")
		is.Equal(r.code, 1)
		is.True(strings.Contains(r.stderr, "Dolt server unreachable at 127.0.0.1:"+testPort))
	})
}

// createIDIn creates an issue from dir and returns its id.
func (s *scratch) createIDIn(dir, title string) string {
	s.t.Helper()
	r := s.bd(dir, "create", title, "--json")
	if r.code != 0 {
		s.t.Fatalf("create %q: %+v", title, r)
	}
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		s.t.Fatalf("create output: %v\n%s", err, r.stdout)
	}
	return v.ID
}

// TestWorktreeMain covers how a linked worktree's .git file leads to the
// main work tree, and the cases that must not.
func TestWorktreeMain(t *testing.T) {
	root := t.TempDir()
	main := filepath.Join(root, "main")
	mustWrite := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(filepath.Join(main, ".git", "HEAD"), "ref: refs/heads/main\n")
	mustWrite(filepath.Join(main, ".git", "worktrees", "w", "commondir"), "../..\n")
	mustWrite(filepath.Join(root, "w", ".git"), "gitdir: "+filepath.Join(main, ".git", "worktrees", "w")+"\n")
	mustWrite(filepath.Join(root, "rel", ".git"), "gitdir: ../main/.git/worktrees/w\n")
	mustWrite(filepath.Join(main, ".git", "modules", "sub", "HEAD"), "x")
	mustWrite(filepath.Join(root, "sub", ".git"), "gitdir: "+filepath.Join(main, ".git", "modules", "sub")+"\n")
	mustWrite(filepath.Join(root, "bare.git", "worktrees", "x", "commondir"), "../..\n")
	mustWrite(filepath.Join(root, "x", ".git"), "gitdir: "+filepath.Join(root, "bare.git", "worktrees", "x")+"\n")
	mustWrite(filepath.Join(root, "junk", ".git"), "not a gitdir line")
	if err := os.MkdirAll(filepath.Join(root, "w", "deep", "er"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(root, "w"), main},
		{filepath.Join(root, "w", "deep", "er"), main}, // from a subdirectory
		{filepath.Join(root, "rel"), main},             // a relative gitdir
		{main, ""},                                     // the main tree itself
		{filepath.Join(root, "sub"), ""},               // a submodule has no commondir
		{filepath.Join(root, "x"), ""},                 // a bare main repo has no work tree
		{filepath.Join(root, "junk"), ""},
		{root, ""},
	} {
		if got := worktreeMain(c.dir); got != c.want {
			t.Errorf("worktreeMain(%s) = %q, want %q", c.dir, got, c.want)
		}
	}
}

// FuzzMainFromGitFile: any .git file content is handled without panic
// and any main it names is an absolute, clean path.
func FuzzMainFromGitFile(f *testing.F) {
	f.Add("gitdir: ../main/.git/worktrees/w\n")
	f.Add("gitdir:")
	f.Add("gitdir: /\x00")
	f.Fuzz(func(t *testing.T, body string) {
		dir := t.TempDir()
		p := filepath.Join(dir, ".git")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Skip()
		}
		if got := mainFromGitFile(dir, p); got != "" && (!filepath.IsAbs(got) || filepath.Clean(got) != got) {
			t.Fatalf("bad main %q", got)
		}
	})
}
