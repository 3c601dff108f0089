package modes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestPlantedFIFOsDoNotStallThePool: an agent plants a FIFO where git
// opens a file (a loose ref in the common directory, its worktree's
// index or HEAD, the target's reflog, a .gitignore of its work tree). Without the scrub, the pool's next git
// call there blocks for its two-minute timeout, again and again; with it,
// the pool ends well within a minute, each planting is reported as a move
// and charged to the window, and the retried work is integrated.
func TestPlantedFIFOsDoNotStallThePool(t *testing.T) {
	for _, tc := range []struct {
		name  string
		where func(common string, a Assignment) string
	}{
		{"loose ref", func(common string, _ Assignment) string {
			return filepath.Join(common, "refs", "heads", "planted")
		}},
		{"own worktree's index", func(common string, a Assignment) string {
			return filepath.Join(common, "worktrees", filepath.Base(a.Dir), "index")
		}},
		{"the target's reflog", func(common string, _ Assignment) string {
			return filepath.Join(common, "logs", "refs", "heads", "main")
		}},
		{"own worktree's HEAD", func(common string, a Assignment) string {
			return filepath.Join(common, "worktrees", filepath.Base(a.Dir), "HEAD")
		}},
		{"a .gitignore in the work tree", func(_ string, a Assignment) string {
			return filepath.Join(a.Dir, ".gitignore")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			p := newProject(t)
			bad, good := p.create("plants"), p.create("honest")
			common := filepath.Join(p.repo, ".git")
			var (
				mu      sync.Mutex
				tries   = map[string]int{}
				planted string
				moves   []RefMove
			)
			pool := p.pool(2, func(ctx context.Context, a Assignment) (bool, error) {
				mu.Lock()
				tries[a.Issue.ID]++
				n := tries[a.Issue.ID]
				mu.Unlock()
				if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte(a.Issue.ID+"\n"), 0o644); err != nil {
					return false, err
				}
				done, err := commitAndClose(ctx, a)
				if a.Issue.ID == bad && n == 1 {
					at := tc.where(common, a)
					if err := os.Remove(at); err != nil && !os.IsNotExist(err) {
						return false, err
					}
					if err := syscall.Mkfifo(at, 0o644); err != nil {
						return false, err
					}
					mu.Lock()
					planted = at
					mu.Unlock()
				}
				return done, err
			})
			pool.RefMoved = func(m RefMove) {
				mu.Lock()
				defer mu.Unlock()
				moves = append(moves, m)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sum, err := pool.Run(ctx)
			is.NoErr(err) // a hang ends in the context's deadline
			is.Equal(len(sum.Integrated), 2)
			found := false
			for _, m := range moves {
				if m.Ref != planted {
					continue
				}
				found = true
				is.NoErr(m.Err)
				is.True(strings.Contains(m.Planted, "a FIFO"))
				charged := false
				for _, s := range m.Suspects {
					charged = charged || s.Issue == bad && s.Charged
				}
				is.True(charged) // the planting window is charged
			}
			is.True(found) // reported
			is.Equal(len(sum.Failed[bad]), 1)
			is.True(strings.Contains(sum.Failed[bad][0], "FIFO"))
			fi, err := os.Lstat(planted)
			is.True(err != nil || fi.Mode().IsRegular()) // no FIFO left
			for _, id := range []string{bad, good} {
				is.Equal(sh(t, p.repo, "git", "show", "main:"+id+".txt"), id)
			}
		})
	}
}
