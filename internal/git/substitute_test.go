package git_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/testkit/gitplant"
)

// An agent can plant an object substitution in the repository (a
// refs/replace/* ref, in a loose file or in packed-refs, or the
// deprecated info/grafts): plain git then reads another commit's content
// or parents than the commit holds, while the target and a push get the
// real commit. ralphd's checks must see what the commit really holds.
func TestNoObjectSubstitution(t *testing.T) {
	type repo struct{ dir, real, twin string }
	// Each route plants its substitution; then the probe, run by plain
	// git, must see the twin (control), and through the runner the real one.
	cases := []struct {
		name  string
		plant func(t *testing.T, r repo)
		probe []string
		real  func(r repo) string // what the probe prints for the real commit
	}{
		{
			name:  "replace ref",
			plant: func(t *testing.T, r repo) { gitplant.Git(t, r.dir, "replace", r.real, r.twin) },
			probe: []string{"show", "HEAD:secret.txt"},
			real:  func(repo) string { return "real\n" },
		},
		{
			name: "packed replace ref",
			plant: func(t *testing.T, r repo) {
				gitplant.Git(t, r.dir, "replace", r.real, r.twin)
				gitplant.Git(t, r.dir, "pack-refs", "--all")
			},
			probe: []string{"log", "-1", "--format=%s", "HEAD"},
			real:  func(repo) string { return "real\n" },
		},
		{
			name: "replaced blob",
			plant: func(t *testing.T, r repo) {
				gitplant.Git(t, r.dir, "replace", rev(t, r.dir, r.real+":secret.txt"), rev(t, r.dir, r.twin+":secret.txt"))
			},
			probe: []string{"cat-file", "-p", "HEAD:secret.txt"},
			real:  func(repo) string { return "real\n" },
		},
		{
			name: "grafts",
			plant: func(t *testing.T, r repo) {
				// The real commit claims the twin as its only parent.
				graft := r.real + " " + r.twin + "\n"
				if err := os.WriteFile(filepath.Join(r.dir, ".git", "info", "grafts"), []byte(graft), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			probe: []string{"rev-parse", "HEAD^"},
			real:  func(r repo) string { return rev(t, r.dir, "HEAD~1") + "\n" },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			dir := gitplant.Repo(t)
			// twin: an innocent commit on the same parent; real: the commit
			// the branch holds, with other content.
			is.NoErr(os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("twin\n"), 0o644))
			gitplant.Git(t, dir, "add", "secret.txt")
			gitplant.Git(t, dir, "commit", "-qm", "twin")
			twin := rev(t, dir, "HEAD")
			gitplant.Git(t, dir, "reset", "-q", "--hard", "HEAD~1")
			is.NoErr(os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("real\n"), 0o644))
			gitplant.Git(t, dir, "add", "secret.txt")
			gitplant.Git(t, dir, "commit", "-qm", "real")
			r := repo{dir: dir, real: rev(t, dir, "HEAD"), twin: twin}
			want := c.real(r)

			c.plant(t, r)
			control := tryOutput(dir, c.probe...)
			is.True(control != want) // plain git reads the substitute

			out, err := git.Output(context.Background(), dir, c.probe...)
			is.NoErr(err)
			is.Equal(string(out), want) // the runner reads what the commit holds
		})
	}
}

func rev(t *testing.T, dir, name string) string {
	t.Helper()
	return strings.TrimSpace(gitplant.Git(t, dir, "rev-parse", name))
}

// tryOutput is plain git's stdout, whatever it exits with.
func tryOutput(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, _ := cmd.Output()
	return string(out)
}
