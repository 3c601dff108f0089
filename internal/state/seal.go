package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// sealedFiles are the state files an agent could rewrite to change how
// ralphd judges it: the attempt counters, the iteration's baseline, history
// (whose records feed status and the report), and everything under
// attempts/ (judgement records and verbatim attempts). running.json is
// sealed too; ralphd's own write of it while sealed updates the seal.
var sealedFiles = []string{AttemptsFile, HistoryFile, BaselineFile, RunningFile}

// sealState is the seal: the sealed files as ralphd left them, and how many
// Seals are open. With several workers, each worker's agent seals; the copy
// is taken by the first Seal, kept up to date by ralphd's own writes (put,
// drop, history appends), and dropped by the last Unseal. Every Unseal
// puts back whatever changed that ralphd did not write. The Store's mu
// guards it.
type sealState struct {
	files map[string][]byte
	open  int
}

// Seal takes a copy, in memory, of every state file an agent could rewrite
// to change how ralphd judges it. Call it just before anything runs the
// agent's code; Unseal then puts back whatever changed meanwhile.
func (s *Store) Seal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seal.open > 0 {
		s.seal.open++
		return nil
	}
	m := map[string][]byte{}
	for _, p := range s.sealedPaths() {
		data, err := readState(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("seal the state: %w", err)
		}
		m[p] = data
	}
	s.seal.files, s.seal.open = m, 1
	return nil
}

// sealedPaths lists the sealed files that exist now, and those in the
// seal.
func (s *Store) sealedPaths() []string {
	var ps []string
	for _, n := range sealedFiles {
		ps = append(ps, s.path(n))
	}
	// The workers' own running records and baselines.
	for _, pat := range []string{runningPrefix + "*.json", baselinePrefix + "*.json"} {
		m, _ := filepath.Glob(filepath.Join(s.dir, pat))
		ps = append(ps, m...)
	}
	entries, _ := os.ReadDir(s.AttemptsDir())
	for _, e := range entries {
		if e.Type().IsRegular() {
			ps = append(ps, filepath.Join(s.AttemptsDir(), e.Name()))
		}
	}
	for p := range s.seal.files {
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	sort.Strings(ps)
	return ps
}

// Unseal compares the sealed files with the copy Seal took, puts back
// every one that was changed, removed or added since, and ends the seal.
// It returns the files it restored, as paths relative to the state dir.
func (s *Store) Unseal() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seal.open == 0 {
		return nil, nil
	}
	var restored []string
	var errs []error
	for _, p := range s.sealedPaths() {
		want, had := s.seal.files[p]
		got, err := readState(p)
		// A directory, FIFO or symlink put in a sealed file's place is a
		// change too: it is moved aside, kept, and the file put back.
		exists := !errors.Is(err, fs.ErrNotExist)
		switch {
		case !had && !exists:
			continue
		case had && err == nil && bytes.Equal(got, want):
			continue
		case unusable(err):
			if _, err = s.moveAside(p); err == nil && had {
				err = atomicWriter{hook: s.writer.hook}.write(p, want, filePerm)
			}
		case !had:
			err = os.Remove(p)
		default:
			// Not through the redacting writer: these are the bytes ralphd
			// wrote, already redacted.
			err = atomicWriter{hook: s.writer.hook}.write(p, want, filePerm)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("restore %s: %w", p, err))
			continue
		}
		rel, _ := filepath.Rel(s.dir, p)
		restored = append(restored, rel)
	}
	if s.seal.open--; s.seal.open == 0 {
		s.seal.files = nil
	}
	return restored, errors.Join(errs...)
}

// reseal records ralphd's own write of a sealed file while sealed. The
// caller holds s.mu.
func (s *Store) reseal(path string, data []byte) {
	if s.seal.files != nil {
		s.seal.files[path] = slices.Clone(data)
	}
}

// resealRemoved records ralphd's own removal of a sealed file while
// sealed. The caller holds s.mu.
func (s *Store) resealRemoved(path string) {
	if s.seal.files != nil {
		delete(s.seal.files, path)
	}
}

// resealAppended records ralphd's own append to a sealed file while
// sealed. The caller holds s.mu.
func (s *Store) resealAppended(path string, line []byte) {
	if s.seal.files != nil {
		s.seal.files[path] = append(slices.Clone(s.seal.files[path]), line...)
	}
}

// put writes a state file atomically, as ralphd's own write (see reseal).
// The caller holds s.mu.
func (s *Store) put(path string, data []byte) error {
	if err := s.writer.write(path, data, filePerm); err != nil {
		return err
	}
	s.reseal(path, s.redact(data))
	return nil
}

// drop removes a state file, as ralphd's own removal. A missing file is not
// an error. The caller holds s.mu.
func (s *Store) drop(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.resealRemoved(path)
	return nil
}
