package modes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/git"
)

// projectConfig is what of the work tree belongs to PLANNING (planningPaths):
// .ralph/, ralphd's configuration and prompts, and what configures the
// agent CLIs (agent.Guarded's ProjectDirs and ProjectFiles, of every
// backend: .claude/, .mcp.json, .codex/, .gemini/, opencode.json,
// .opencode/), which every run of a CLI in the project loads, PLANNING's
// with full powers. It is held from before the agent starts until its
// checks have run, in the work tree and in HEAD, and put back (in HEAD by
// one revert commit on top).
type projectConfig struct {
	dirs  []*git.DirSnapshot
	files []heldFile
	// head is what HEAD held at each path (oid "" where nothing); nil
	// when it could not be read (no commit yet: nothing to revert).
	head []headEntry
}

// heldFile is one of ProjectFiles as held: its content and mode, or
// absent.
type heldFile struct {
	path    string // relative to the work tree
	present bool
	data    []byte
	mode    fs.FileMode
}

// planningPaths are the dirs and files of the work tree that belong to
// PLANNING: .ralph/, and every agent CLI's configuration.
func planningPaths() (dirs, files []string) {
	dirs, files = agent.ProjectConfig()
	return append([]string{".ralph"}, dirs...), files
}

// planningWhy says why path belongs to PLANNING.
func planningWhy(path string) string {
	if path == ".ralph" {
		return ".ralph/ belongs to PLANNING"
	}
	return "it configures an agent CLI, which PLANNING runs here with full powers"
}

// holdProjectConfig takes what of the work tree and HEAD belongs to
// PLANNING. What cannot be read is not held (and said so by warn).
func holdProjectConfig(ctx context.Context, dir string, warn func(msg string, err error)) projectConfig {
	dirs, files := planningPaths()
	var p projectConfig
	for _, d := range dirs {
		s, err := git.TakeDir(filepath.Join(dir, d))
		if err != nil {
			warn("could not hold "+d+"/ for the iteration", err)
			continue
		}
		p.dirs = append(p.dirs, s)
	}
	for _, f := range files {
		h := heldFile{path: f}
		fi, err := os.Lstat(filepath.Join(dir, f))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err == nil && fi.Mode().IsRegular():
			if h.data, err = atomicfile.Read(filepath.Join(dir, f), maxGuardedFile); err != nil {
				warn("could not hold "+f+" for the iteration", err)
				continue
			}
			h.present, h.mode = true, fi.Mode().Perm()
		default:
			warn("could not hold "+f+" for the iteration", fmt.Errorf("not a regular file"))
			continue
		}
		p.files = append(p.files, h)
	}
	head, err := headEntries(ctx, dir, dirs, files)
	if err == nil {
		p.head = head
	}
	return p
}

// headEntries reads what HEAD holds at each of dirs and files, in one git
// call.
func headEntries(ctx context.Context, dir string, dirs, files []string) ([]headEntry, error) {
	paths := append(slices.Clip(dirs), files...)
	out, err := git.Output(ctx, dir, append([]string{"ls-tree", "-z", "HEAD", "--"}, paths...)...)
	if err != nil {
		return nil, err
	}
	at := map[string]headEntry{}
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			continue
		}
		at[path] = headEntry{path: path, mode: f[0], typ: f[1], oid: f[2]}
	}
	entries := make([]headEntry, len(paths))
	for i, p := range paths {
		entries[i] = headEntry{path: p}
		if e, ok := at[p]; ok {
			entries[i] = e
		}
		entries[i].dir = i < len(dirs)
	}
	return entries, nil
}

// restore puts back what the iteration changed of the agent
// configuration and returns a line for each change.
func (p projectConfig) restore(ctx context.Context, dir string) (changes []string, err error) {
	var errs []error
	for _, s := range p.dirs {
		files, rerr := s.Restore()
		rel, _ := filepath.Rel(dir, s.Dir())
		for _, f := range files {
			changes = append(changes, fmt.Sprintf("%s was changed in the work tree; restored (%s)", filepath.Join(rel, f), planningWhy(rel)))
		}
		if rerr != nil {
			errs = append(errs, rerr)
		}
	}
	for _, h := range p.files {
		c, ferr := h.restore(dir)
		if c != "" {
			changes = append(changes, c)
		}
		if ferr != nil {
			errs = append(errs, ferr)
		}
	}
	if p.head != nil {
		var dirs, files []string
		for _, e := range p.head {
			if e.dir {
				dirs = append(dirs, e.path)
			} else {
				files = append(files, e.path)
			}
		}
		now, herr := headEntries(ctx, dir, dirs, files)
		var back []headEntry
		for i, e := range p.head {
			if herr == nil && now[i] != e {
				back = append(back, e)
			}
		}
		if herr != nil {
			errs = append(errs, herr)
		} else if len(back) > 0 {
			c, cerr := revertCommit(ctx, dir, back)
			if cerr != nil {
				errs = append(errs, cerr)
			} else {
				for _, e := range back {
					name := e.path
					if e.dir {
						name += "/"
					}
					changes = append(changes, fmt.Sprintf("%s was changed in a commit; reverted by commit %s (%s)", name, c, planningWhy(e.path)))
				}
			}
		}
	}
	if len(errs) > 0 {
		return changes, fmt.Errorf("restore the agent configuration: %w", errors.Join(errs...))
	}
	return changes, nil
}

// restore puts h back in the work tree dir: its content and mode, or
// nothing when there was none.
func (h heldFile) restore(dir string) (string, error) {
	path := filepath.Join(dir, h.path)
	cur, err := atomicfile.Read(path, maxGuardedFile)
	fi, lerr := os.Lstat(path)
	switch {
	case !h.present && errors.Is(lerr, fs.ErrNotExist):
		return "", nil
	case !h.present:
		if err := os.RemoveAll(path); err != nil {
			return "", fmt.Errorf("remove %s: %w", h.path, err)
		}
		return fmt.Sprintf("%s was made in the work tree; removed (%s)", h.path, planningWhy(h.path)), nil
	case err == nil && bytes.Equal(cur, h.data) && fi.Mode().Perm() == h.mode:
		return "", nil
	}
	if lerr == nil && fi.IsDir() {
		if err := os.RemoveAll(path); err != nil {
			return "", fmt.Errorf("remove %s: %w", h.path, err)
		}
	}
	if err := atomicfile.Write(path, h.data, h.mode); err != nil {
		return "", fmt.Errorf("restore %s: %w", h.path, err)
	}
	return fmt.Sprintf("%s was changed in the work tree; restored (%s)", h.path, planningWhy(h.path)), nil
}
