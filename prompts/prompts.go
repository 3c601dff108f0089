// Package prompts holds ralphd's built-in BUILD and PLANNING prompts and
// renders them with text/template.
//
// A project overrides a prompt by putting a file of the same name in its
// prompt directory (.ralph/ by default, or --prompt-dir).
package prompts

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"text/template"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/beads"
)

//go:embed PROMPT_build.md PROMPT_plan.md
var builtin embed.FS

// Prompt file names.
const (
	BuildFile = "PROMPT_build.md"
	PlanFile  = "PROMPT_plan.md"
)

// BuildData is what the BUILD prompt template sees.
type BuildData struct {
	Issue            beads.Issue
	Attempt          int
	MaxAttempts      int
	Scope            string
	Escalation       string // strategy-shift or context-expansion text, if any
	PreviousAttempts string // verbatim attempt record, if any
}

// PlanData is what the PLANNING prompt template sees.
type PlanData struct {
	Scope string
	Stuck []string // ids of issues labelled ralph:stuck
}

// maxPrompt bounds a prompt override: the built-in prompts are a few KiB.
const maxPrompt = 4 << 20

// Set is a pair of parsed prompt templates and where each came from.
type Set struct {
	build, plan *template.Template
	BuildSource string // "built-in" or the override's path
	PlanSource  string
}

// Load parses the prompts, preferring files in dir when it is not empty and
// they exist. A template error names the file.
func Load(dir string) (*Set, error) {
	s := &Set{}
	var err error
	if s.build, s.BuildSource, err = load(dir, BuildFile); err != nil {
		return nil, err
	}
	if s.plan, s.PlanSource, err = load(dir, PlanFile); err != nil {
		return nil, err
	}
	return s, nil
}

func load(dir, name string) (*template.Template, string, error) {
	source := "built-in"
	var data []byte
	var err error
	if dir != "" {
		p := filepath.Join(dir, name)
		// Not os.ReadFile: a FIFO there would block ralphd forever.
		data, err = atomicfile.ReadFollow(p, maxPrompt)
		switch {
		case err == nil:
			source = p
		case !errors.Is(err, fs.ErrNotExist):
			return nil, "", fmt.Errorf("read prompt: %w; remove it to use the built-in prompt, or make it a text/template file", err)
		}
	}
	if source == "built-in" {
		if data, err = builtin.ReadFile(name); err != nil {
			return nil, "", fmt.Errorf("read built-in prompt %s: %w", name, err)
		}
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(data))
	if err != nil {
		return nil, "", fmt.Errorf("parse prompt %s: %w", source, err)
	}
	return t, source, nil
}

// Build renders the BUILD prompt.
func (s *Set) Build(d BuildData) (string, error) { return render(s.build, s.BuildSource, d) }

// Plan renders the PLANNING prompt.
func (s *Set) Plan(d PlanData) (string, error) { return render(s.plan, s.PlanSource, d) }

func render(t *template.Template, source string, d any) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("render prompt %s: %w", source, err)
	}
	return b.String(), nil
}
