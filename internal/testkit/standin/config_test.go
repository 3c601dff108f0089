package standin

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// TestConfigDB: a "db" key in bd's configuration selects the database as
// --db does, for every command, `bd where` and `bd context` included, as
// in bd 1.0.5; the project's config.local.yaml beats its config.yaml,
// which beats the user's, and the environment's BEADS_DIR beats them all.
func TestConfigDB(t *testing.T) {
	s := initRepo(t)
	id := s.createID("real")
	copyDir := filepath.Join(s.root, "copy")
	if out, err := exec.Command("cp", "-a", s.repo, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	decoy := filepath.Join(copyDir, ".beads")
	if r := s.bd(copyDir, "update", id, "--priority", "0"); r.code != 0 {
		t.Fatalf("update the copy: %+v", r)
	}
	priority := func() int {
		t.Helper()
		r := s.bd(s.repo, "show", id, "--json")
		var got []struct{ Priority int }
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 {
			t.Fatalf("show: %v %+v", err, r)
		}
		return got[0].Priority
	}
	where := func() string {
		t.Helper()
		var w struct{ Path string }
		if err := json.Unmarshal([]byte(s.bd(s.repo, "where", "--json").stdout), &w); err != nil {
			t.Fatalf("where: %v", err)
		}
		return w.Path
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	real := filepath.Join(s.repo, ".beads")
	project := filepath.Join(real, "config.yaml")
	orig, err := os.ReadFile(project)
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name  string
		setup func()
		want  string
	}{
		{"none", func() {}, real},
		{"project", func() { write(project, string(orig)+"db: "+decoy+"/embeddeddolt # moved\n") }, decoy},
		{"project quoted", func() { write(project, string(orig)+"db: \""+decoy+"\"\n") }, decoy},
		{"user", func() { write(filepath.Join(s.home, ".config", "bd", "config.yaml"), "db: "+decoy+"\n") }, decoy},
		{"legacy user", func() { write(filepath.Join(s.home, ".beads", "config.yaml"), "db: "+decoy+"\n") }, decoy},
		{"project beats user", func() {
			write(filepath.Join(s.home, ".config", "bd", "config.yaml"), "db: "+decoy+"\n")
			write(project, string(orig)+"db: \"\"\n")
		}, real},
		{"local beats project", func() {
			write(project, string(orig)+"db: "+decoy+"\n")
			write(filepath.Join(real, "config.local.yaml"), "db: "+real+"\n")
		}, real},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			write(project, string(orig))
			for _, p := range []string{filepath.Join(s.home, ".config"), filepath.Join(s.home, ".beads"), filepath.Join(real, "config.local.yaml")} {
				is.NoErr(os.RemoveAll(p))
			}
			c.setup()
			is.Equal(where(), c.want) // where names what the other commands open
			want := 2
			if c.want == decoy {
				want = 0
			}
			is.Equal(priority(), want) // show reads the database the configuration names
		})
	}

	// BEADS_DIR in the environment wins over the configuration.
	is := is.New(t)
	write(project, string(orig)+"db: "+decoy+"\n")
	env := s.baseEnv
	s.baseEnv = append(append([]string{}, env...), "BEADS_DIR="+real)
	is.Equal(where(), real)
	is.Equal(priority(), 2)
	s.baseEnv = env
}
