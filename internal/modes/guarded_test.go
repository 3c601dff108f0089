package modes

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// Whatever an iteration does to a guarded path, restore puts back what was
// held (file content and mode, link target, absence) and keeps what the
// iteration left beside it, never deleting it; an untouched path is not
// reported.
func TestGuardedHold(t *testing.T) {
	now := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	const aside = ".ralphd-moved-20261128T180000Z"
	tests := []struct {
		name   string
		before func(dir string) // the user's, before the hold
		during func(dir string) // the iteration's
		want   string           // the reported change; "" none
		file   string           // settings' content after, "" absent
		link   string           // settings' link target after
		kept   string           // content of what was moved aside
	}{
		{name: "untouched", before: writeSettings("mine"), during: func(string) {}, file: "mine"},
		{name: "absent, untouched", before: func(string) {}, during: func(string) {}},
		{name: "made", before: func(string) {}, during: writeSettings("evil"),
			want: "was made", kept: "evil"},
		{name: "edited in place", before: writeSettings("mine"), during: func(d string) {
			f, _ := os.OpenFile(filepath.Join(d, "settings.json"), os.O_WRONLY|os.O_TRUNC, 0)
			f.WriteString("evil")
			f.Close()
		}, want: "was changed", file: "mine", kept: "evil"},
		{name: "same size, same second", before: writeSettings("mine"), during: func(d string) {
			p := filepath.Join(d, "settings.json")
			fi, _ := os.Stat(p)
			f, _ := os.OpenFile(p, os.O_WRONLY, 0)
			f.WriteString("evi1")
			f.Close()
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}, want: "was changed", file: "mine", kept: "evi1"},
		{name: "replaced by a rename", before: writeSettings("mine"), during: func(d string) {
			os.WriteFile(filepath.Join(d, "x"), []byte("evil"), 0o600)
			os.Rename(filepath.Join(d, "x"), filepath.Join(d, "settings.json"))
		}, want: "was changed", file: "mine", kept: "evil"},
		{name: "mode widened", before: writeSettings("mine"), during: func(d string) {
			os.Chmod(filepath.Join(d, "settings.json"), 0o666)
		}, want: "was changed", file: "mine", kept: "mine"},
		{name: "removed", before: writeSettings("mine"), during: func(d string) {
			os.Remove(filepath.Join(d, "settings.json"))
		}, want: "was removed", file: "mine"},
		{name: "a FIFO in its place", before: writeSettings("mine"), during: func(d string) {
			os.Remove(filepath.Join(d, "settings.json"))
			syscall.Mkfifo(filepath.Join(d, "settings.json"), 0o600)
		}, want: "was changed", file: "mine"},
		{name: "a link replaced by a file", before: linkSettings, during: func(d string) {
			os.Remove(filepath.Join(d, "settings.json"))
			os.WriteFile(filepath.Join(d, "settings.json"), []byte("evil"), 0o600)
		}, want: "was changed", link: "dotfiles/settings.json", kept: "evil"},
		{name: "a link turned elsewhere", before: linkSettings, during: func(d string) {
			os.Remove(filepath.Join(d, "settings.json"))
			os.WriteFile(filepath.Join(d, "evil.json"), []byte("evil"), 0o600)
			os.Symlink("evil.json", filepath.Join(d, "settings.json"))
		}, want: "was changed", link: "dotfiles/settings.json", kept: "evil"},
		{name: "a link untouched", before: linkSettings, during: func(string) {}, link: "dotfiles/settings.json"},
		{name: "a dir made", before: func(string) {}, during: func(d string) {
			os.MkdirAll(filepath.Join(d, "settings.json", "x"), 0o700)
		}, want: "was made"},
		{name: "an empty dir made", before: func(string) {}, during: func(d string) { // as a CLI does when it starts: not reported, removed
			os.Mkdir(filepath.Join(d, "settings.json"), 0o700)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			tt.before(dir)
			g := holdGuarded([]string{filepath.Join(dir, "settings.json"), filepath.Join(dir, "plugins")})
			is.Equal(len(g), 2) // both held, there or not
			tt.during(dir)
			changes, err := g.restore(now)
			is.NoErr(err)
			if tt.want == "" {
				is.Equal(len(changes), 0)
			} else {
				is.Equal(len(changes), 1)
				is.True(strings.Contains(changes[0], tt.want))
			}
			settings := filepath.Join(dir, "settings.json")
			switch {
			case tt.link != "":
				l, err := os.Readlink(settings)
				is.NoErr(err)
				is.Equal(l, filepath.Join(dir, tt.link))
			case tt.file != "":
				b, err := os.ReadFile(settings)
				is.NoErr(err)
				is.Equal(string(b), tt.file)
				fi, _ := os.Lstat(settings)
				is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
			default:
				_, err := os.Lstat(settings)
				is.True(os.IsNotExist(err))
			}
			if tt.kept != "" {
				b, err := os.ReadFile(settings + aside)
				is.NoErr(err)
				is.Equal(string(b), tt.kept) // kept beside, never deleted
			}
			again, err := g.restore(now)
			is.NoErr(err)
			is.Equal(len(again), 0) // put back: nothing more to do
		})
	}
}

func writeSettings(content string) func(string) {
	return func(d string) { os.WriteFile(filepath.Join(d, "settings.json"), []byte(content), 0o600) }
}

func linkSettings(d string) {
	os.MkdirAll(filepath.Join(d, "dotfiles"), 0o700)
	os.WriteFile(filepath.Join(d, "dotfiles", "settings.json"), []byte("mine"), 0o600)
	os.Symlink(filepath.Join(d, "dotfiles", "settings.json"), filepath.Join(d, "settings.json"))
}

// A second move aside in the same second takes a free name.
func TestMoveAsideFreeName(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	now := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	p := filepath.Join(dir, "settings.json")
	var got []string
	for range 3 {
		is.NoErr(os.WriteFile(p, nil, 0o600))
		to, err := moveAside(p, now)
		is.NoErr(err)
		got = append(got, filepath.Base(to))
	}
	is.Equal(got, []string{"settings.json.ralphd-moved-20261128T180000Z", "settings.json.ralphd-moved-20261128T180000Z-1", "settings.json.ralphd-moved-20261128T180000Z-2"})
}

// An empty dir an iteration makes is removed, not held as there: the
// next iteration cannot fill it unseen (without the sandbox, a held dir's
// contents are not compared).
func TestGuardedEmptyDirNotHeldAfter(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	now := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	g := holdGuarded([]string{plugins})
	is.NoErr(os.Mkdir(plugins, 0o700)) // iteration 1: an empty dir
	changes, err := g.restore(now)
	is.NoErr(err)
	is.Equal(len(changes), 0)
	_, err = os.Lstat(plugins)
	is.True(os.IsNotExist(err))        // removed
	g = holdGuarded([]string{plugins}) // iteration 2 fills it
	is.NoErr(os.MkdirAll(filepath.Join(plugins, "x"), 0o700))
	is.NoErr(os.WriteFile(filepath.Join(plugins, "x", "hook.js"), []byte("evil"), 0o600))
	changes, err = g.restore(now)
	is.NoErr(err)
	is.Equal(len(changes), 1)
	is.True(strings.Contains(changes[0], "was made"))
}
