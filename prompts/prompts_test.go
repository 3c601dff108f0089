package prompts

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ralphd/ralphd/internal/beads"
)

func TestBuiltinBuild(t *testing.T) {
	is := is.New(t)
	s, err := Load("")
	is.NoErr(err)
	is.Equal(s.BuildSource, "built-in")
	out, err := s.Build(BuildData{
		Issue:       beads.Issue{ID: "rt-abc", Title: "Parse config", AcceptanceCriteria: "| ok | `go test ./...` | 0 |", Priority: 1, IssueType: "task"},
		Attempt:     2,
		MaxAttempts: 3,
		Escalation:  "The previous approach failed the same way 2 times.",
	})
	is.NoErr(err)
	for _, want := range []string{
		"**ID:** rt-abc", "Attempt:** 2 of 3", "`go test ./...`",
		"bd close rt-abc --reason", "Strategy shift required", "may **not** remove",
	} {
		is.True(strings.Contains(out, want)) // rendered prompt carries the issue and the rules
	}
	is.True(!strings.Contains(out, "Previous attempts")) // empty sections are left out
}

func TestBuiltinPlan(t *testing.T) {
	is := is.New(t)
	s, err := Load("")
	is.NoErr(err)
	out, err := s.Plan(PlanData{Scope: "rt-epic", Stuck: []string{"rt-1", "rt-2"}})
	is.NoErr(err)
	is.True(strings.Contains(out, "<promise>PLAN_COMPLETE</promise>"))
	is.True(strings.Contains(out, "Currently stuck: rt-1, rt-2."))
	is.True(strings.Contains(out, "--parent=rt-epic"))
}

func TestOverride(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(dir, BuildFile), []byte("custom {{.Issue.ID}}"), 0o600))
	s, err := Load(dir)
	is.NoErr(err)
	is.Equal(s.BuildSource, filepath.Join(dir, BuildFile))
	is.Equal(s.PlanSource, "built-in") // only the file present is overridden
	out, err := s.Build(BuildData{Issue: beads.Issue{ID: "x-1"}})
	is.NoErr(err)
	is.Equal(out, "custom x-1")
}

func TestTemplateErrorsNameTheFile(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	p := filepath.Join(dir, BuildFile)
	is.NoErr(os.WriteFile(p, []byte("{{.Nope}}"), 0o600))
	s, err := Load(dir)
	is.NoErr(err)
	_, err = s.Build(BuildData{})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), p)) // a typo'd field is an error naming the file, not "<no value>"

	is.NoErr(os.WriteFile(p, []byte("{{.Issue.ID"), 0o600))
	_, err = Load(dir)
	is.True(err != nil && strings.Contains(err.Error(), p))
}

// TestOverrideNotAFile: an override that is not a regular file is an error
// naming it and what to do, and a FIFO never blocks Load; a symlink to a
// file is followed.
func TestOverrideNotAFile(t *testing.T) {
	tests := []struct {
		name     string
		make     func(p string) error
		contains string // "" means it loads
	}{
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "not a regular file (a FIFO)"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, "not a regular file (a directory)"},
		{"symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file (a device)"},
		{"too large", func(p string) error { return os.WriteFile(p, make([]byte, maxPrompt+1), 0o600) }, "file too large"},
		{"symlink to a file", func(p string) error {
			if err := os.WriteFile(p+".real", []byte("linked {{.Issue.ID}}"), 0o600); err != nil {
				return err
			}
			return os.Symlink(p+".real", p)
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			p := filepath.Join(dir, BuildFile)
			is.NoErr(tt.make(p))
			done := make(chan error, 1)
			go func() {
				_, err := Load(dir)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Load blocked")
			}
			if tt.contains == "" {
				is.NoErr(err)
				return
			}
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tt.contains) || !strings.Contains(err.Error(), "remove it to use the built-in prompt") {
				t.Fatalf("Load error %v; want it to name %s, say %q and what to do", err, p, tt.contains)
			}
		})
	}
}
