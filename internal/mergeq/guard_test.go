package mergeq

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/git"
)

// TestTargetMovesArePutBack tries every route by which an agent (or a
// person) can move the target behind the merge queue's back, then has
// another worker's work integrated: the foreign move is reported, what it
// pointed at is kept on a branch, the target ends at the verified
// integration on top of where the queue left it, and its checkout matches.
func TestTargetMovesArePutBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		// attack moves the target; x is a commit the attacker made on a
		// branch of its own, on top of main; main is the main checkout.
		attack func(t *testing.T, f *fixture, x, wdir string)
		kept   bool // x must be kept (it is not on the target)
	}{
		{"update-ref", func(t *testing.T, f *fixture, x, wdir string) {
			sh(t, wdir, "git", "update-ref", "refs/heads/main", x)
		}, true},
		{"detach the checkout, then branch -f", func(t *testing.T, f *fixture, x, wdir string) {
			// git refuses branch -f on a checked-out branch: detach it first.
			sh(t, f.repo, "git", "checkout", "-q", "--detach")
			sh(t, wdir, "git", "branch", "-f", "main", x)
		}, true},
		{"push . ignoring the checkout", func(t *testing.T, f *fixture, x, wdir string) {
			sh(t, wdir, "git", "push", "-q", "--receive-pack=git -c receive.denyCurrentBranch=ignore receive-pack", ".", x+":refs/heads/main")
		}, true},
		{"push . updating the checkout", func(t *testing.T, f *fixture, x, wdir string) {
			sh(t, wdir, "git", "push", "-q", "--receive-pack=git -c receive.denyCurrentBranch=updateInstead receive-pack", f.repo, x+":refs/heads/main")
		}, true},
		{"edit the ref file", func(t *testing.T, f *fixture, x, wdir string) {
			write(t, filepath.Join(f.repo, ".git", "refs", "heads", "main"), x+"\n")
		}, true},
		{"packed-refs", func(t *testing.T, f *fixture, x, wdir string) {
			if err := os.Remove(filepath.Join(f.repo, ".git", "refs", "heads", "main")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(f.repo, ".git", "packed-refs"), "# pack-refs with: peeled fully-peeled sorted \n"+x+" refs/heads/main\n")
		}, true},
		{"delete the ref", func(t *testing.T, f *fixture, x, wdir string) {
			sh(t, wdir, "git", "update-ref", "-d", "refs/heads/main")
		}, false},
		{"rewind, dropping integrated work", func(t *testing.T, f *fixture, x, wdir string) {
			sh(t, wdir, "git", "update-ref", "refs/heads/main", "main~1")
		}, false},
		{"reset --hard in the target's checkout", func(t *testing.T, f *fixture, x, wdir string) {
			sh(t, f.repo, "git", "reset", "-q", "--hard", x)
		}, true},
		{"reset --soft in the target's checkout", func(t *testing.T, f *fixture, x, wdir string) {
			sh(t, f.repo, "git", "reset", "-q", "--soft", x)
		}, true},
		{"commit in the target's checkout", func(t *testing.T, f *fixture, x, wdir string) {
			write(t, filepath.Join(f.repo, "by-hand.txt"), "by hand\n")
			sh(t, f.repo, "git", "add", "by-hand.txt")
			sh(t, f.repo, "git", "commit", "-q", "-m", "by hand")
		}, false}, // kept under its own commit, checked below
		{"checkout another branch in the target's checkout", func(t *testing.T, f *fixture, x, wdir string) {
			sh(t, f.repo, "git", "branch", "attacker", x)
			sh(t, f.repo, "git", "checkout", "-q", "attacker")
		}, false}, // x stays on its own branch
		{"repoint the checkout's HEAD to a worker branch", func(t *testing.T, f *fixture, x, wdir string) {
			sh(t, f.repo, "git", "symbolic-ref", "HEAD", "refs/heads/"+git.Branch("w9"))
		}, false},
		{"detach the checkout's HEAD", func(t *testing.T, f *fixture, x, wdir string) {
			write(t, filepath.Join(f.repo, ".git", "HEAD"), x+"\n")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			ctx := context.Background()
			q, moves := watched(t, f)
			// One integration first, so that a rewind drops real work.
			_, err := q.Integrate(ctx, f.work("w0", map[string]string{"zero.txt": "0\n"}))
			is.NoErr(err)
			want := sh(t, f.repo, "git", "rev-parse", "main")

			// The attacker's commit, made in its own worktree.
			ra := f.work("w9", map[string]string{"evil.txt": "unverified\n", "shared.txt": "overwritten\n"})
			x := sh(t, ra.Dir, "git", "rev-parse", "HEAD")
			rb := f.work("w1", map[string]string{"b.txt": "b\n"})
			tc.attack(t, f, x, ra.Dir)
			by := sh(t, f.repo, "sh", "-c", "git rev-parse -q --verify main || true")

			res, err := q.Integrate(ctx, rb)
			is.NoErr(err)
			is.True(res.Integrated)
			is.True(len(*moves) > 0) // the move was reported
			for _, m := range *moves {
				is.NoErr(m.Err)
			}
			// The target is the verified integration on top of where the
			// queue left it: the attacker's commit is not on it.
			tip := sh(t, f.repo, "git", "rev-parse", "main")
			is.Equal(tip, res.Commit)
			is.Equal(sh(t, f.repo, "git", "rev-parse", "main~1"), want)
			is.Equal(q.Tip(), tip)
			is.Equal(sh(t, f.repo, "git", "symbolic-ref", "HEAD"), "refs/heads/main")
			f.clean()
			is.Equal(sh(t, f.repo, "git", "diff", "--stat", "main", "--", ".", ":(exclude).beads"), "") // files match the ref
			is.Equal(sh(t, f.repo, "cat", "shared.txt"), "line 1\nline 2\nline 3")
			_, err = os.Stat(filepath.Join(f.repo, "evil.txt"))
			is.True(errors.Is(err, os.ErrNotExist))
			// Nothing is lost: what the target was moved to is kept.
			kept := sh(t, f.repo, "git", "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/"+git.MovedPrefix)
			if tc.kept {
				is.True(strings.Contains(kept, x))
			}
			if by != "" && by != want {
				if out := sh(t, f.repo, "sh", "-c", "git merge-base --is-ancestor "+by+" main && echo on-target || true"); out == "" {
					is.True(strings.Contains(kept, by)) // every foreign tip is kept
				}
			}
			// A second look finds nothing more.
			again, err := q.Check(ctx)
			is.NoErr(err)
			is.Equal(len(again), 0)
		})
	}
}

// TestTargetMoveAtPoolEnd: Check, as the pool calls it when it ends, puts
// back a move made after the last integration.
func TestTargetMoveAtPoolEnd(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	ctx := context.Background()
	q := &Queue{Repo: f.repo, Target: "main"}
	_, err := q.Watch(ctx)
	is.NoErr(err)
	want := sh(t, f.repo, "git", "rev-parse", "main")
	r := f.work("w1", map[string]string{"a.txt": "a\n"})
	sh(t, f.repo, "git", "merge", "-q", "--ff-only", r.Branch) // unverified work landed by hand
	moves, err := q.Check(ctx)
	is.NoErr(err)
	is.Equal(len(moves), 1)
	is.Equal(moves[0].Got, sh(t, r.Dir, "git", "rev-parse", "HEAD"))
	is.True(strings.HasPrefix(moves[0].Kept, git.MovedPrefix+"main/"))
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), want)
	is.Equal(sh(t, f.repo, "git", "rev-parse", moves[0].Kept), moves[0].Got)
	f.clean()
	_, err = os.Stat(filepath.Join(f.repo, "a.txt"))
	is.True(errors.Is(err, os.ErrNotExist))
}

// TestTargetMoveOverLocalChanges: a move whose checkout has the person's
// own changes on top is put back in the ref only; the changes stay, and
// the next integration refuses the dirty checkout, keeping the work.
func TestTargetMoveOverLocalChanges(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	ctx := context.Background()
	q, moves := watched(t, f)
	want := sh(t, f.repo, "git", "rev-parse", "main")
	ra := f.work("w9", map[string]string{"evil.txt": "x\n"})
	sh(t, f.repo, "git", "reset", "-q", "--hard", sh(t, ra.Dir, "git", "rev-parse", "HEAD"))
	write(t, filepath.Join(f.repo, "shared.txt"), "the user's edit\n")
	res, err := q.Integrate(ctx, f.work("w1", map[string]string{"b.txt": "b\n"}))
	is.True(errors.Is(err, ErrTargetDirty))
	is.True(res.Kept != "")
	is.Equal(len(*moves), 1)
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), want)
	is.Equal(sh(t, f.repo, "cat", "shared.txt"), "the user's edit")
}

// TestWorkerMovesArePutBack tries every route by which another worker's
// agent can move a worker's branch or HEAD while its finished work waits
// for the queue: the queue puts them back where the pool recorded them,
// keeps what they were moved to, reports it, and integrates the worker's
// own work only.
func TestWorkerMovesArePutBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		attack func(t *testing.T, f *fixture, x string, victim Request, gitDir string)
	}{
		{"update-ref", func(t *testing.T, f *fixture, x string, v Request, gitDir string) {
			sh(t, f.repo, "git", "update-ref", "refs/heads/"+v.Branch, x)
		}},
		{"branch -f from a detached worktree", func(t *testing.T, f *fixture, x string, v Request, gitDir string) {
			sh(t, v.Dir, "git", "checkout", "-q", "--detach")
			sh(t, f.repo, "git", "branch", "-f", v.Branch, x)
		}},
		{"edit the ref file", func(t *testing.T, f *fixture, x string, v Request, gitDir string) {
			write(t, filepath.Join(f.repo, ".git", "refs", "heads", filepath.FromSlash(v.Branch)), x+"\n")
		}},
		{"packed-refs", func(t *testing.T, f *fixture, x string, v Request, gitDir string) {
			sh(t, f.repo, "git", "pack-refs", "--all")
			sh(t, f.repo, "sh", "-c", "sed -i 's|^[0-9a-f]* refs/heads/"+v.Branch+"$|"+x+" refs/heads/"+v.Branch+"|' .git/packed-refs")
		}},
		{"delete the branch", func(t *testing.T, f *fixture, x string, v Request, gitDir string) {
			sh(t, f.repo, "git", "update-ref", "-d", "refs/heads/"+v.Branch)
		}},
		{"reset --hard in its worktree", func(t *testing.T, f *fixture, x string, v Request, gitDir string) {
			sh(t, v.Dir, "git", "reset", "-q", "--hard", x)
		}},
		{"repoint its HEAD file", func(t *testing.T, f *fixture, x string, v Request, gitDir string) {
			write(t, filepath.Join(gitDir, "HEAD"), "ref: refs/heads/"+git.Branch("w9")+"\n")
		}},
		{"detach its HEAD", func(t *testing.T, f *fixture, x string, v Request, gitDir string) {
			write(t, filepath.Join(gitDir, "HEAD"), x+"\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			ctx := context.Background()
			q, moves := watched(t, f)
			x := sh(t, f.work("w9", map[string]string{"evil.txt": "x\n"}).Dir, "git", "rev-parse", "HEAD")
			v := f.work("w1", map[string]string{"mine.txt": "mine\n"})
			v.Tip = sh(t, v.Dir, "git", "rev-parse", "HEAD")
			gitDir := sh(t, v.Dir, "git", "rev-parse", "--absolute-git-dir")
			tc.attack(t, f, x, v, gitDir)

			res, err := q.Integrate(ctx, v)
			is.NoErr(err)
			is.True(res.Integrated)
			is.True(len(*moves) > 0)
			for _, m := range *moves {
				is.NoErr(m.Err)
				is.Equal(m.Worker, "w1")
			}
			is.Equal(sh(t, f.repo, "git", "show", "main:mine.txt"), "mine") // its own work
			_, err = os.Stat(filepath.Join(f.repo, "evil.txt"))
			is.True(errors.Is(err, os.ErrNotExist)) // and only that
			is.Equal(sh(t, f.repo, "git", "rev-list", "--count", "main"), "2")
			is.Equal(sh(t, v.Dir, "git", "symbolic-ref", "HEAD"), "refs/heads/"+v.Branch)
			f.clean()
		})
	}
}

// TestAdmitRefusesBeforeAnythingMoves: a request the pool no longer
// admits leaves the target and the branch as they were.
func TestAdmitRefusesBeforeAnythingMoves(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	q := &Queue{Repo: f.repo, Target: "main"}
	before := sh(t, f.repo, "git", "rev-parse", "main")
	r := f.work("w1", map[string]string{"a.txt": "a\n"})
	tip := sh(t, r.Dir, "git", "rev-parse", "HEAD")
	refused := errors.New("charged")
	r.Admit = func() error { return refused }
	_, err := q.Integrate(context.Background(), r)
	is.True(errors.Is(err, refused))
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), before)
	is.Equal(sh(t, r.Dir, "git", "rev-parse", "HEAD"), tip)
}

// TestWatchChecksTheRemote: at the start of a run with a remote, a local
// target behind the remote's (work pushed just before a crash) is
// fast-forwarded with its checkout; one with commits the remote lacks is
// left and said; a remote target rewritten since the last fetch is said,
// and what it held is kept.
func TestWatchChecksTheRemote(t *testing.T) {
	ctx := context.Background()
	t.Run("behind", func(t *testing.T) {
		is := is.New(t)
		_, a, b := twoClones(t)
		// b integrated and pushed, then died before its local main moved:
		// here, a pushes and b's local main lags.
		r := a.work("w1", map[string]string{"a.txt": "a\n"})
		res, err := (&Queue{Repo: a.repo, Target: "main", Remote: "origin"}).Integrate(ctx, r)
		is.NoErr(err)
		q := &Queue{Repo: b.repo, Target: "main", Remote: "origin"}
		notes, err := q.Watch(ctx)
		is.NoErr(err)
		is.Equal(len(notes), 1)
		is.True(strings.Contains(notes[0], "fast-forwarded"))
		is.Equal(sh(t, b.repo, "git", "rev-parse", "main"), res.Commit)
		is.Equal(q.Tip(), res.Commit)
		is.Equal(sh(t, b.repo, "cat", "a.txt"), "a") // the checkout followed
		b.clean()
	})
	t.Run("ahead", func(t *testing.T) {
		is := is.New(t)
		_, a, _ := twoClones(t)
		write(t, filepath.Join(a.repo, "mine.txt"), "mine\n")
		sh(t, a.repo, "git", "add", "mine.txt")
		sh(t, a.repo, "git", "commit", "-q", "-m", "a person's own")
		mine := sh(t, a.repo, "git", "rev-parse", "main")
		notes, err := (&Queue{Repo: a.repo, Target: "main", Remote: "origin"}).Watch(ctx)
		is.NoErr(err)
		is.Equal(len(notes), 1)
		is.True(strings.Contains(notes[0], "never pushes them"))
		is.Equal(sh(t, a.repo, "git", "rev-parse", "main"), mine)
	})
	t.Run("rewritten", func(t *testing.T) {
		is := is.New(t)
		remote, a, b := twoClones(t)
		r := a.work("w1", map[string]string{"a.txt": "a\n"})
		res, err := (&Queue{Repo: a.repo, Target: "main", Remote: "origin"}).Integrate(ctx, r)
		is.NoErr(err)
		sh(t, b.repo, "git", "fetch", "-q", "origin") // b saw the integrated work
		// Someone rewrites the remote's main behind everyone's back.
		sh(t, remote, "git", "update-ref", "refs/heads/main", "main~1")
		q := &Queue{Repo: b.repo, Target: "main", Remote: "origin"}
		notes, err := q.Watch(ctx)
		is.NoErr(err)
		is.True(len(notes) > 0)
		is.True(strings.Contains(notes[0], "rewritten"))
		kept := sh(t, b.repo, "git", "for-each-ref", "--format=%(objectname)", "refs/heads/"+git.MovedPrefix+"origin-main/")
		is.Equal(kept, res.Commit) // nothing is lost
	})
}

// TestMoveBeforeACrash: a move made while a queue watched, then a crash
// (no Unwatch), is found by the next start's Watch through TipFile; after
// a run that ended, the target is the person's again.
func TestMoveBeforeACrash(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	ctx := context.Background()
	tipFile := filepath.Join(t.TempDir(), "mergeq.tip")
	q := &Queue{Repo: f.repo, Target: "main", TipFile: tipFile}
	_, err := q.Watch(ctx)
	is.NoErr(err)
	res, err := q.Integrate(ctx, f.work("w1", map[string]string{"a.txt": "a\n"}))
	is.NoErr(err)
	x := sh(t, f.work("w9", map[string]string{"evil.txt": "x\n"}).Dir, "git", "rev-parse", "HEAD")
	sh(t, f.repo, "git", "reset", "-q", "--hard", x) // moved; then ralphd is SIGKILLed

	var moves []git.Move
	q2 := &Queue{Repo: f.repo, Target: "main", TipFile: tipFile, Moved: func(m git.Move) { moves = append(moves, m) }}
	_, err = q2.Watch(ctx)
	is.NoErr(err)
	is.Equal(len(moves), 1)
	is.Equal(moves[0].Got, x)
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), res.Commit)
	f.clean()
	is.Equal(sh(t, f.repo, "git", "rev-parse", moves[0].Kept), x)

	// A run that ends hands the target back: a commit made between runs
	// is the person's.
	is.NoErr(q2.Unwatch())
	sh(t, f.repo, "git", "merge", "-q", "--ff-only", x)
	q3 := &Queue{Repo: f.repo, Target: "main", TipFile: tipFile, Moved: func(m git.Move) { t.Errorf("moved: %v", m) }}
	_, err = q3.Watch(ctx)
	is.NoErr(err)
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), x)
}

// TestPlantedLocksAreRemoved: with the queue watching, a lock file planted
// beside the target's ref or its checkout's HEAD or index (each makes
// every move of the target fail) is removed once it has stayed lockGrace,
// reported like a move, and the integration goes on. A lock a live git
// drops within the grace is waited for and left alone; a planted
// packed-refs.lock blocks nothing the queue does and is left too.
func TestPlantedLocksAreRemoved(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string // under the target checkout's .git
		dir  bool   // planted as a directory
		ref  string // what the reported move names; "" when none is
	}{
		{"the target's ref lock", "refs/heads/main.lock", false, "refs/heads/main"},
		{"the checkout's HEAD.lock", "HEAD.lock", false, "HEAD of "},
		{"the checkout's index.lock", "index.lock", false, "the index of "},
		{"index.lock as a directory", "index.lock", true, "the index of "},
		{"packed-refs.lock", "packed-refs.lock", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			ctx := context.Background()
			q, moves := watched(t, f)
			want := sh(t, f.repo, "git", "rev-parse", "main")
			lock := filepath.Join(f.repo, ".git", filepath.FromSlash(tc.path))
			if tc.dir {
				write(t, filepath.Join(lock, "x"), "x\n")
			} else {
				write(t, lock, want+"\n")
			}
			res, err := q.Integrate(ctx, f.work("w1", map[string]string{"b.txt": "b\n"}))
			is.NoErr(err)
			is.True(res.Integrated)
			is.Equal(sh(t, f.repo, "git", "rev-parse", "main~1"), want)
			f.clean()
			_, err = os.Lstat(lock)
			if tc.ref == "" {
				is.NoErr(err) // left alone
				is.Equal(len(*moves), 0)
				return
			}
			is.True(errors.Is(err, os.ErrNotExist)) // removed
			is.Equal(len(*moves), 1)
			is.True(strings.HasPrefix((*moves)[0].Ref, tc.ref))
			is.Equal((*moves)[0].Lock, lock)
			is.NoErr((*moves)[0].Err)
			is.True(strings.Contains((*moves)[0].String(), "locked by something other than ralphd"))
			// The next integration finds nothing more.
			res, err = q.Integrate(ctx, f.work("w2", map[string]string{"c.txt": "c\n"}))
			is.NoErr(err)
			is.True(res.Integrated)
			is.Equal(len(*moves), 1)
		})
	}
	t.Run("a live git's lock is waited for", func(t *testing.T) {
		is := is.New(t)
		f := newRepo(t)
		ctx := context.Background()
		q, moves := watched(t, f)
		r := f.work("w1", map[string]string{"b.txt": "b\n"})
		lock := filepath.Join(f.repo, ".git", "index.lock")
		write(t, lock, "")
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(lockGrace / 4)
			_ = os.Remove(lock) // the git finished
		}()
		res, err := q.Integrate(ctx, r)
		<-done
		is.NoErr(err)
		is.True(res.Integrated)
		is.Equal(len(*moves), 0) // not taken for planted
	})
}

// watched is a queue on f's main that watches it and records the moves
// it reports.
func watched(t *testing.T, f *fixture) (*Queue, *[]git.Move) {
	t.Helper()
	moves := &[]git.Move{}
	q := &Queue{Repo: f.repo, Target: "main", Moved: func(m git.Move) { *moves = append(*moves, m) }}
	if _, err := q.Watch(context.Background()); err != nil {
		t.Fatal(err)
	}
	return q, moves
}
