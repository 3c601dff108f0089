package state

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// shellID computes a project id the way the bash loop does, by running
// `printf %s "$VALUE" | sha256sum | cut -c1-12`.
func shellID(t *testing.T, value string) string {
	t.Helper()
	out := run(t, t.TempDir(), []string{"VALUE=" + value}, "sh", "-c", `printf %s "$VALUE" | sha256sum | cut -c1-12`)
	return strings.TrimSpace(out)
}

func TestProjectIDRemote(t *testing.T) {
	isolateGit(t)
	tests := []struct {
		name string
		url  string
	}{
		{"ssh scp-like", "git@github.com:ralphd/ralphd.git"},
		{"https", "https://github.com/ralphd/ralphd"},
		{"https trailing .git", "https://github.com/ralphd/ralphd.git"},
		{"ssh url with port", "ssh://git@example.com:2222/team/repo.git"},
		{"spaces inside", "https://example.com/my repo with spaces.git"},
		{"trailing space", "/srv/git/project.git "},
		{"non-ascii", "https://例え.jp/レポ.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			repo := newRepo(t)
			run(t, repo, nil, "git", "config", "remote.origin.url", tt.url)
			// Precondition: git gives back exactly the bytes we set.
			is.Equal(strings.TrimSuffix(run(t, repo, nil, "git", "config", "--get", "remote.origin.url"), "\n"), tt.url)

			id, err := ProjectID(context.Background(), repo)
			is.NoErr(err)
			is.Equal(id.ID, shellID(t, tt.url))
			is.Equal(id.Rule, RuleRemote)
			is.Equal(id.RemoteURL, tt.url)
			phys, err := filepath.EvalSymlinks(repo)
			is.NoErr(err)
			is.Equal(id.TopLevel, phys)
		})
	}
}

func TestProjectIDDistinguishesTrailingGit(t *testing.T) {
	// The id hashes the exact bytes: URLs that name the same repository in
	// different spellings get different ids, as in the bash loop.
	is := is.New(t)
	is.True(hashID("https://github.com/ralphd/ralphd") != hashID("https://github.com/ralphd/ralphd.git"))
}

func TestProjectIDNoRemote(t *testing.T) {
	isolateGit(t)
	is := is.New(t)
	repo := newRepo(t)
	// What the bash loop hashes when started from the repository root.
	want := strings.TrimSpace(run(t, repo, nil, "sh", "-c", `printf %s "$(pwd -P)" | sha256sum | cut -c1-12`))

	id, err := ProjectID(context.Background(), repo)
	is.NoErr(err)
	is.Equal(id.ID, want)
	is.Equal(id.Rule, RulePath)
	is.Equal(id.RemoteURL, NoRemote)

	// From a subdirectory: the same project.
	sub := filepath.Join(repo, "a", "b")
	is.NoErr(os.MkdirAll(sub, 0o755))
	idSub, err := ProjectID(context.Background(), sub)
	is.NoErr(err)
	is.Equal(idSub, id)

	// Through a symlink: the physical path is hashed, as `pwd -P` does.
	link := filepath.Join(t.TempDir(), "link")
	is.NoErr(os.Symlink(repo, link))
	viaLink := strings.TrimSpace(run(t, link, nil, "sh", "-c", `printf %s "$(pwd -P)" | sha256sum | cut -c1-12`))
	is.Equal(viaLink, want)
	idLink, err := ProjectID(context.Background(), link)
	is.NoErr(err)
	is.Equal(idLink.ID, want)

	// An empty remote counts as none, as `[ -n "$remote_url" ]` does.
	run(t, repo, nil, "git", "config", "remote.origin.url", "")
	idEmpty, err := ProjectID(context.Background(), repo)
	is.NoErr(err)
	is.Equal(idEmpty.ID, want)
	is.Equal(idEmpty.Rule, RulePath)
}

func TestProjectIDNotARepo(t *testing.T) {
	isolateGit(t)
	is := is.New(t)
	_, err := ProjectID(context.Background(), t.TempDir())
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "not inside a git repository work tree"))
	is.True(strings.Contains(err.Error(), "git init"))
}

func TestProjectIDNoGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	is := is.New(t)
	_, err := ProjectID(context.Background(), t.TempDir())
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "install git"))
}
