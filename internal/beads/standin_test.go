package beads

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/standin/standintest"
)

func TestMain(m *testing.M) { os.Exit(standintest.Main(m.Run)) } // the stand-in bd for the claim tests

func run(t *testing.T, env []string, dir string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// TestWorkersRaceOverStandin runs 8 claimers, half in each of two clones
// sharing one tracker through the stand-in's server mode (whose racing
// claims fail with Dolt's serialization failure), until every issue is
// worked. Each worker records what it worked; no issue may be worked
// twice, and every issue must be worked.
func TestWorkersRaceOverStandin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the stand-in bd")
	}
	bin, err := standintest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	is := is.New(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	is.NoErr(os.MkdirAll(filepath.Join(root, "servers", "127.0.0.1_45999"), 0o755))
	is.NoErr(os.MkdirAll(home, 0o755))
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e",
		"BD_STANDIN_SERVER_ROOT=" + filepath.Join(root, "servers"), "BD_STANDIN_TXN_WINDOW=5ms"}
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	is.NoErr(os.MkdirAll(a, 0o755))
	run(t, env, a, "git", "init", "-q")
	run(t, env, a, bin, "init", "--prefix", "sv", "--quiet", "--server", "--server-host", "127.0.0.1", "--server-port", "45999", "--external")
	run(t, env, a, "git", "add", "-A")
	run(t, env, a, "git", "commit", "-q", "-m", "init")
	run(t, env, root, "git", "clone", "-q", a, b)
	const issues = 24
	for i := 0; i < issues; i++ {
		run(t, env, a, bin, "create", fmt.Sprintf("Issue %d", i), "--silent")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	worked := map[string][]string{} // issue → workers, from the workers' own records
	busy, tries := 0, 0
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := a
			if w%2 == 1 {
				dir = b
			}
			actor := fmt.Sprintf("ralphd/host%d/w%d", w%2, w)
			client := &Client{Bin: bin, Dir: dir, Env: env, Actor: actor, Timeout: time.Minute}
			cl := &Claimer{Tracker: client, Actor: actor, BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond}
			for {
				res, err := cl.Next(ctx)
				mu.Lock()
				tries += res.Tries
				mu.Unlock()
				if err != nil {
					t.Errorf("%s: %v", actor, err)
					return
				}
				switch res.Outcome {
				case Empty:
					return
				case Busy:
					mu.Lock()
					busy++
					mu.Unlock()
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
	is.Equal(len(worked), issues) // every issue worked
	for id, ws := range worked {
		if len(ws) != 1 {
			t.Errorf("%s worked by %v", id, ws) // never twice
		}
	}
	// 24 wins and 8 final empty answers; anything above is a retry after
	// a lost serialization race, which the 8 racers must have had.
	is.True(tries > issues+8)
	t.Logf("claim calls %d for %d issues; busy outcomes %d", tries, issues, busy)
}
