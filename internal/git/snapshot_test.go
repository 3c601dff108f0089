package git_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/testkit/gitplant"
)

// Every way an iteration can plant code in the git directory shows up in
// Changed, and Restore undoes it.
func TestSnapshotSeesAndUndoesPlantedCode(t *testing.T) {
	for _, r := range gitplant.Routes() {
		t.Run(r.Name, func(t *testing.T) {
			is := is.New(t)
			dir := gitplant.Repo(t)
			configBefore, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
			is.NoErr(err)
			snap, err := git.SnapshotAt(filepath.Join(dir, ".git"))
			is.NoErr(err)
			changed, err := snap.Changed()
			is.NoErr(err)
			is.Equal(len(changed), 0) // nothing changed yet

			r.Plant(t, dir, t.TempDir())
			changed, err = snap.Changed()
			is.NoErr(err)
			if r.Name == "filter" || r.Name == "textconv" || r.Name == "diff-driver-command" || r.Name == "filter-odd-name" || r.Name == "filter-process" {
				is.Equal(changed, []string{"config"}) // the driver lives in config
			}
			is.True(len(changed) > 0) // the plant is seen

			restored, err := snap.Restore()
			is.NoErr(err)
			is.Equal(restored, changed)
			changed, err = snap.Changed()
			is.NoErr(err)
			is.Equal(len(changed), 0) // all undone
			configAfter, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
			is.NoErr(err)
			is.Equal(string(configAfter), string(configBefore))
		})
	}
}

// A hook replaced by a directory or a symlink is a change, and a hook's
// mode is part of what is held.
func TestSnapshotSeesModeAndTypeChanges(t *testing.T) {
	is := is.New(t)
	dir := gitplant.Repo(t)
	hook := filepath.Join(dir, ".git", "hooks", "pre-push")
	is.NoErr(os.WriteFile(hook, []byte("#!/bin/sh\nexit 0\n"), 0o644))
	snap, err := git.SnapshotAt(filepath.Join(dir, ".git"))
	is.NoErr(err)
	is.NoErr(os.Chmod(hook, 0o755))
	changed, err := snap.Changed()
	is.NoErr(err)
	is.Equal(changed, []string{filepath.Join("hooks", "pre-push")})
	_, err = snap.Restore()
	is.NoErr(err)
	fi, err := os.Stat(hook)
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o644))

	cfg := filepath.Join(dir, ".git", "config")
	is.NoErr(os.Rename(cfg, cfg+".moved"))
	is.NoErr(os.Symlink(cfg+".moved", cfg))
	changed, err = snap.Changed()
	is.NoErr(err)
	is.Equal(changed, []string{"config"})
	_, err = snap.Restore()
	is.NoErr(err)
	fi, err = os.Lstat(cfg)
	is.NoErr(err)
	is.True(fi.Mode().IsRegular())
}

// A snapshot persisted before an iteration still finds and undoes a
// plant after a crash, decoded by another process.
func TestSnapshotRoundTrip(t *testing.T) {
	is := is.New(t)
	dir := gitplant.Repo(t)
	snap, err := git.SnapshotAt(filepath.Join(dir, ".git"))
	is.NoErr(err)
	data, err := json.Marshal(snap)
	is.NoErr(err)
	for _, r := range gitplant.Routes() {
		if r.Name == "fsmonitor" {
			r.Plant(t, dir, t.TempDir())
		}
	}
	var back git.Snapshot
	is.NoErr(json.Unmarshal(data, &back))
	changed, err := back.Restore()
	is.NoErr(err)
	is.Equal(changed, []string{"config"})
	changed, err = back.Changed()
	is.NoErr(err)
	is.Equal(len(changed), 0)

	is.True(json.Unmarshal([]byte(`{"git_dir":"/x","files":{"../escape":{"data":"","mode":420}}}`), &back) != nil)
	is.True(json.Unmarshal([]byte(`{"git_dir":"rel","files":{}}`), &back) != nil)
	_, err = git.SnapshotAt("rel/.git")
	is.True(err != nil) // a relative git dir is refused
}

// A hook that is a symlink (as hook managers install them) and is pointed
// at the agent's own script is a change, and Restore points it back.
func TestSnapshotSeesRetargetedHookLink(t *testing.T) {
	is := is.New(t)
	dir := gitplant.Repo(t)
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	is.NoErr(os.Symlink("../../scripts/pre-commit", hook))
	snap, err := git.SnapshotAt(filepath.Join(dir, ".git"))
	is.NoErr(err)
	evil := filepath.Join(t.TempDir(), "evil")
	is.NoErr(os.WriteFile(evil, []byte("#!/bin/sh\ntouch /tmp/pwned\n"), 0o755))
	is.NoErr(os.Remove(hook))
	is.NoErr(os.Symlink(evil, hook))
	changed, err := snap.Changed()
	is.NoErr(err)
	is.Equal(changed, []string{filepath.Join("hooks", "pre-commit")})

	data, err := json.Marshal(snap) // and after a crash, from the persisted form
	is.NoErr(err)
	var back git.Snapshot
	is.NoErr(json.Unmarshal(data, &back))
	restored, err := back.Restore()
	is.NoErr(err)
	is.Equal(restored, changed)
	target, err := os.Readlink(hook)
	is.NoErr(err)
	is.Equal(target, "../../scripts/pre-commit")
}

// FuzzSnapshotJSON checks the persisted form of a git snapshot, which is
// read back after a crash: a snapshot it decodes holds an absolute git
// directory and only paths inside it (so Restore writes nowhere else),
// and it encodes back to what decodes the same.
func FuzzSnapshotJSON(f *testing.F) {
	dir := f.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		f.Fatalf("git init: %v: %s", err, out)
	}
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("../../scripts/pre-push", filepath.Join(dir, ".git", "hooks", "pre-push")); err != nil {
		f.Fatal(err)
	}
	snap, err := git.SnapshotAt(filepath.Join(dir, ".git"))
	if err != nil {
		f.Fatal(err)
	}
	seed, err := json.Marshal(snap)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	for _, s := range []string{`{"git_dir":"/x","files":{"../escape":{"data":"","mode":420}}}`, `{"git_dir":"rel","files":{}}`,
		`{"git_dir":"/x","files":{"hooks/a":{"data":"L2V0Yy9wYXNzd2Q=","mode":134218239}}}`, `{"git_dir":"/x","files":null}`, `null`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s git.Snapshot
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		first, err := json.Marshal(&s)
		if err != nil {
			t.Fatalf("encode a decoded snapshot: %v", err)
		}
		var j struct {
			GitDir string                     `json:"git_dir"`
			Files  map[string]json.RawMessage `json:"files"`
		}
		if err := json.Unmarshal(first, &j); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
			return // json leaves the value alone
		}
		if !filepath.IsAbs(j.GitDir) {
			t.Fatalf("decoded a relative git dir %q", j.GitDir)
		}
		for p := range j.Files {
			if !filepath.IsLocal(p) {
				t.Fatalf("decoded a path %q outside the git dir", p)
			}
		}
		var back git.Snapshot
		if err := json.Unmarshal(first, &back); err != nil {
			t.Fatalf("re-decode %s: %v", first, err)
		}
		second, _ := json.Marshal(&back)
		if !bytes.Equal(first, second) {
			t.Fatalf("not stable:\n%s\n%s", first, second)
		}
	})
}

// The hooks directory (or info/) swapped for a link to a directory
// elsewhere: what is there is not read as the git directory's, so
// Restore neither deletes nor writes anything outside; the held hooks
// come back in a real directory.
func TestSnapshotHooksDirSwappedForALinkOut(t *testing.T) {
	for _, sub := range []string{"hooks", "info"} {
		t.Run(sub, func(t *testing.T) {
			is := is.New(t)
			dir := gitplant.Repo(t)
			gitDir := filepath.Join(dir, ".git")
			is.NoErr(os.MkdirAll(filepath.Join(gitDir, "info"), 0o755))
			is.NoErr(os.WriteFile(filepath.Join(gitDir, "info", "attributes"), []byte("* -text\n"), 0o644))
			is.NoErr(os.WriteFile(filepath.Join(gitDir, "hooks", "pre-commit"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
			snap, err := git.SnapshotAt(gitDir)
			is.NoErr(err)

			outside := t.TempDir()
			for _, f := range []string{"victim", "attributes", "pre-commit"} {
				is.NoErr(os.WriteFile(filepath.Join(outside, f), []byte("the user's "+f), 0o644))
			}
			is.NoErr(os.RemoveAll(filepath.Join(gitDir, sub)))
			is.NoErr(os.Symlink(outside, filepath.Join(gitDir, sub)))
			changed, err := snap.Changed()
			is.NoErr(err)
			is.True(slices.Contains(changed, sub))
			_, err = snap.Restore()
			is.NoErr(err)

			for _, f := range []string{"victim", "attributes", "pre-commit"} {
				got, err := os.ReadFile(filepath.Join(outside, f))
				is.NoErr(err)                          // nothing outside deleted
				is.Equal(string(got), "the user's "+f) // nor written
			}
			fi, err := os.Lstat(filepath.Join(gitDir, sub))
			is.NoErr(err)
			is.True(fi.IsDir()) // a real directory again
			got, err := os.ReadFile(filepath.Join(gitDir, "hooks", "pre-commit"))
			is.NoErr(err)
			is.Equal(string(got), "#!/bin/sh\nexit 0\n")
			got, err = os.ReadFile(filepath.Join(gitDir, "info", "attributes"))
			is.NoErr(err)
			is.Equal(string(got), "* -text\n")
			changed, err = snap.Changed()
			is.NoErr(err)
			is.Equal(len(changed), 0)
		})
	}
}

// Each file Snapshot holds is put back for its own reason.
func TestWhy(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"config", "run code"},
		{"config.worktree", "run code"},
		{filepath.Join("hooks", "pre-commit"), "run code"},
		{filepath.Join("info", "attributes"), "run code"},
		{filepath.Join("info", "exclude"), "ignore"},
		{"shallow", "prune"},
		{filepath.Join("objects", "info", "alternates"), "objects only it points at"},
		{filepath.Join("objects", "info", "http-alternates"), "objects only it points at"},
	} {
		if got := git.Why(tc.file); !strings.Contains(got, tc.want) {
			t.Errorf("Why(%q) = %q, want it to say %q", tc.file, got, tc.want)
		}
	}
}
