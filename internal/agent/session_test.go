package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

const testSession = "862e0dbf-f692-4422-96cc-30c52efcdae5"

// testOpencodeSession is an opencode session id.
const testOpencodeSession = "ses_4a1b2c3d4e5f6a7b8c9d0e1f2a"

func TestValidSessionID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{testSession, true},
		{"01A22012-4DFB-71D2-8087-E8D6918D1C1B", true},
		{"", false},
		{"862e0dbf-f692-4422-96cc-30c52efcdae", false},      // short
		{"862e0dbf-f692-4422-96cc-30c52efcdae55", false},    // long
		{"862e0dbff692-4422-96cc-30c52efcdae5-", false},     // dashes misplaced
		{"862e0dbf-f692-4422-96cc-30c52efcdaeg", false},     // not hex
		{"../../../../../../../../../etc/passwd", false},    // a path
		{"862e0dbf-f692-4422-96cc-30c52efcda/5", false},     // a slash
		{"--resume=x-f692-4422-96cc-30c52efcdae5", false},   // an option
		{"862e0dbf-f692-4422-96cc-30c52efcdae5\n", false},   // a newline
		{"T-862e0dbf-f692-4422-96cc-30c52efcdae5", false},   // Amp's thread ids are not resumed
		{"862e0dbf-f692-4422-96cc-30c5\x002efcdae5", false}, // a NUL
		{testOpencodeSession, true},
		{"ses_" + strings.Repeat("Z", 26), true},
		{"ses_4a1b2c3d4e5f6a7b8c9d0e1f2", false},            // short
		{"ses_4a1b2c3d4e5f6a7b8c9d0e1f2ab", false},          // long
		{"SES_4a1b2c3d4e5f6a7b8c9d0e1f2a", false},           // prefix case
		{"ses-4a1b2c3d4e5f6a7b8c9d0e1f2a", false},           // prefix dash
		{"ses_4a1b2c3d4e5f6a7b8c9d0e1/2a", false},           // a slash
		{"ses_4a1b2c3d4e5f6a7b8c9d0e1.2a", false},           // a dot
		{"ses_../../../../../../../etc", false},             // a path
		{"ses_4a1b2c3d4e5f6a7b8c9d0e1\x002a", false},        // a NUL
		{"ses_4a1b2c3d4e5f6a7b8c9d0e1_2a", false},           // an underscore past the prefix
		{"ses_4a1b2c3d4e5f6a7b8c9d0e1f2\n", false},          // a newline
		{"--session=4a1b2c3d4e5f6a7b8c9d0", false},          // an option
		{"ses_4a1b2c3d4e5f6a7b8c9d0e1f2\u00e9"[:30], false}, // not ASCII
	} {
		if got := ValidSessionID(c.id); got != c.want {
			t.Errorf("ValidSessionID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}

func FuzzValidSessionID(f *testing.F) {
	f.Add(testSession)
	f.Add("../x")
	f.Add(testOpencodeSession)
	f.Fuzz(func(t *testing.T, id string) {
		if !ValidSessionID(id) {
			return
		}
		// A valid id is safe in a path and on a command line.
		if len(id) != 30 && len(id) != 36 || strings.ContainsAny(id, "/\\.\x00\n ") || id[0] == '-' {
			t.Fatalf("ValidSessionID accepted %q", id)
		}
		if len(id) == 36 && strings.Trim(id, "0123456789abcdefABCDEF-") != "" {
			t.Fatalf("ValidSessionID accepted %q", id)
		}
		if len(id) == 30 && (!strings.HasPrefix(id, "ses_") ||
			strings.Trim(id[4:], "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "") {
			t.Fatalf("ValidSessionID accepted %q", id)
		}
	})
}

func TestSessionCheck(t *testing.T) {
	ok := SessionFile{Rel: "projects/-w/" + testSession + ".jsonl", Data: []byte("{}\n")}
	for _, c := range []struct {
		name string
		s    Session
		bad  bool
	}{
		{"good", Session{ID: testSession, Files: []SessionFile{ok}}, false},
		{"bad id", Session{ID: "x", Files: []SessionFile{ok}}, true},
		{"no files", Session{ID: testSession}, true},
		{"dot dot", Session{ID: testSession, Files: []SessionFile{{Rel: "../../.bashrc" + testSession}}}, true},
		{"inner dot dot", Session{ID: testSession, Files: []SessionFile{{Rel: "projects/../../" + testSession + ".jsonl"}}}, true},
		{"absolute", Session{ID: testSession, Files: []SessionFile{{Rel: "/home/u/.bashrc" + testSession}}}, true},
		{"another file", Session{ID: testSession, Files: []SessionFile{{Rel: "settings.json"}}}, true},
		{"id in the dir only", Session{ID: testSession, Files: []SessionFile{{Rel: testSession + "/settings.json"}}}, true},
		{"backslash", Session{ID: testSession, Files: []SessionFile{{Rel: `a\` + testSession}}}, true},
		{"too large", Session{ID: testSession, Files: []SessionFile{{Rel: ok.Rel, Data: make([]byte, MaxSessionBytes+1)}}}, true},
	} {
		if err := c.s.Check(); (err != nil) != c.bad {
			t.Errorf("%s: Check() = %v, want error %v", c.name, err, c.bad)
		}
	}
}

// claudeHome makes a home with Claude Code's transcript of testSession for
// a run in dir, and returns the home and the transcript's path.
func claudeHome(t *testing.T, dir string) (Home, string) {
	t.Helper()
	home := t.TempDir()
	p := filepath.Join(home, ".claude", "projects", claudeProject(dir), testSession+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"type":"user"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return Home{Dir: home, Getenv: func(string) string { return "" }}, p
}

func TestClaudeSavesAndResumesASession(t *testing.T) {
	is := is.New(t)
	dir := "/work/my repo.git"
	is.Equal(claudeProject(dir), "-work-my-repo-git")
	h, p := claudeHome(t, dir)
	inv := Invocation{Mode: "build", Dir: dir, Home: h}
	s, err := Claude{}.SaveSession(inv, testSession)
	is.NoErr(err)
	is.Equal(s.ID, testSession)
	is.Equal(len(s.Files), 1)
	is.Equal(s.Files[0].Rel, "projects/-work-my-repo-git/"+testSession+".jsonl")

	// Between the runs the agent rewrites its transcript: the resume puts
	// ralphd's copy back.
	is.NoErr(os.WriteFile(p, []byte("planted\n"), 0o600))
	inv.Resume, inv.Prompt = &s, "go on"
	spec, err := Claude{}.Command(inv)
	is.NoErr(err)
	i := slices.Index(spec.Argv, "--resume")
	is.True(i > 0 && spec.Argv[i+1] == testSession)
	is.Equal(spec.Stdin, "go on")
	got, err := os.ReadFile(p)
	is.NoErr(err)
	is.Equal(string(got), `{"type":"user"}`+"\n")

	// A fresh run has no --resume.
	inv.Resume = nil
	spec, err = Claude{}.Command(inv)
	is.NoErr(err)
	is.True(!slices.Contains(spec.Argv, "--resume"))
}

// The agent's tries at making ralphd keep something other than its own
// transcript: each leaves nothing to resume.
func TestClaudeSaveSessionRefusesPlants(t *testing.T) {
	dir := "/w/repo"
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, h Home, p string)
		id    string
	}{
		{"transcript is a link to a secret", func(t *testing.T, h Home, p string) {
			secret := filepath.Join(h.Dir, "secret")
			_ = os.WriteFile(secret, []byte("token"), 0o600)
			_ = os.Remove(p)
			_ = os.Symlink(secret, p)
		}, testSession},
		{"transcript is a hard link", func(t *testing.T, h Home, p string) {
			_ = os.Link(p, filepath.Join(h.Dir, "other"))
		}, testSession},
		{"project dir is a link", func(t *testing.T, h Home, p string) {
			d := filepath.Dir(p)
			elsewhere := filepath.Join(h.Dir, "elsewhere")
			_ = os.Rename(d, elsewhere)
			_ = os.Symlink(elsewhere, d)
		}, testSession},
		{"a second transcript of the id elsewhere", func(t *testing.T, h Home, p string) {
			// The one where the work tree's is not: gone, and two others.
			_ = os.Remove(p)
			for _, d := range []string{"-a", "-b"} {
				q := filepath.Join(h.Dir, ".claude", "projects", d, testSession+".jsonl")
				_ = os.MkdirAll(filepath.Dir(q), 0o700)
				_ = os.WriteFile(q, []byte("x\n"), 0o600)
			}
		}, testSession},
		{"an id that is a path", func(t *testing.T, h Home, p string) {}, "../../../../etc/passwd"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p := claudeHome(t, dir)
			c.plant(t, h, p)
			if s, err := (Claude{}).SaveSession(Invocation{Dir: dir, Home: h}, c.id); err == nil {
				t.Fatalf("SaveSession kept %+v", s)
			}
		})
	}
}

// Putting a session back never writes through a link the agent left in
// the transcript's place: the link goes, its target stays as it was.
func TestPlaceSessionReplacesLinks(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	target := filepath.Join(t.TempDir(), "bashrc")
	is.NoErr(os.WriteFile(target, []byte("mine"), 0o600))
	rel := "projects/-w/" + testSession + ".jsonl"
	is.NoErr(os.MkdirAll(filepath.Join(root, "projects", "-w"), 0o700))
	is.NoErr(os.Symlink(target, filepath.Join(root, filepath.FromSlash(rel))))
	is.NoErr(placeSession(root, Session{ID: testSession, Files: []SessionFile{{Rel: rel, Data: []byte("kept\n")}}}))
	got, err := os.ReadFile(target)
	is.NoErr(err)
	is.Equal(string(got), "mine")
	got, err = os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	is.NoErr(err)
	is.Equal(string(got), "kept\n")

	// A dir on the way that is a link: refused, nothing written there.
	elsewhere := t.TempDir()
	is.NoErr(os.RemoveAll(filepath.Join(root, "projects")))
	is.NoErr(os.Symlink(elsewhere, filepath.Join(root, "projects")))
	is.True(placeSession(root, Session{ID: testSession, Files: []SessionFile{{Rel: rel, Data: []byte("kept\n")}}}) != nil)
	ents, _ := os.ReadDir(elsewhere)
	is.Equal(len(ents), 0)
}

func TestCodexSavesAndResumesASession(t *testing.T) {
	is := is.New(t)
	real := filepath.Join(t.TempDir(), "codex")
	rel := "sessions/2026/11/28/rollout-2026-11-28T02-53-20-" + testSession + ".jsonl"
	p := filepath.Join(real, filepath.FromSlash(rel))
	is.NoErr(os.MkdirAll(filepath.Dir(p), 0o700))
	is.NoErr(os.WriteFile(p, []byte(`{"type":"session_meta"}`+"\n"), 0o600))
	c := Codex{Home: real}
	inv := Invocation{Mode: "build", Dir: "/w", ScratchDir: t.TempDir(), DenyBash: []string{"bd delete"}}
	s, err := c.SaveSession(inv, testSession)
	is.NoErr(err)
	is.Equal(s.Files[0].Rel, rel)

	// Gone from CODEX_HOME by the next attempt: put back, and resumed.
	is.NoErr(os.Remove(p))
	inv.Resume, inv.Prompt = &s, "go on"
	spec, err := c.Command(inv)
	is.NoErr(err)
	i := slices.Index(spec.Argv, "resume")
	is.True(i > 0)
	is.Equal(spec.Argv[i+1:], []string{testSession, "-"})
	is.Equal(spec.Stdin, "go on")
	got, err := os.ReadFile(p)
	is.NoErr(err)
	is.Equal(string(got), `{"type":"session_meta"}`+"\n")
	// The overlay CODEX_HOME links the real sessions dir, so the
	// resumed session is written where the next save reads it.
	var home string
	for _, kv := range spec.Env {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			home = v
		}
	}
	is.True(home != "")
	link, err := os.Readlink(filepath.Join(home, "sessions"))
	is.NoErr(err)
	is.Equal(link, filepath.Join(real, "sessions"))

	// Two rollouts of the id: none is kept.
	is.NoErr(os.WriteFile(filepath.Join(filepath.Dir(p), "rollout-2026-11-28T03-00-00-"+testSession+".jsonl"), []byte("x\n"), 0o600))
	_, err = c.SaveSession(inv, testSession)
	is.True(err != nil)
}
