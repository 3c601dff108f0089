package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// sealedFiles are the state files an agent could rewrite to change how
// ralphd judges it: the attempt counters, the iteration's baseline, history
// (whose records feed status and the report), and everything under
// attempts/ (judgement records and verbatim attempts), and the saved
// tracker pin (which a start compares what bd opens with). running.json is
// sealed too; ralphd's own write of it while sealed updates the seal.
var sealedFiles = []string{AttemptsFile, HistoryFile, BaselineFile, RunningFile, TrackerPinFile, ReadWindowsFile, TrackerHeldFile, TrackerHeldDeltaFile, TreeWorkFile}

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
		data, err := s.read(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if unusable(err) {
			// Something ralphd did not make: moved aside now, so that
			// the agent finds (and Unseal compares) ralphd's state only.
			if err := s.setAside(p); err != nil {
				return fmt.Errorf("seal the state: %w", err)
			}
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

// sealedPaths lists the names of the sealed files that exist now, and
// those in the seal. A listing never follows a link: an attempts/ that is
// a link lists nothing, and its files in the seal are put back in a new
// attempts/ (Unseal).
func (s *Store) sealedPaths() []string {
	ps := slices.Clone(sealedFiles)
	// The workers' own running records and baselines.
	ps = append(ps, s.workerFiles()...)
	entries, _ := s.root.ReadDir(AttemptsDirName)
	for _, e := range entries {
		if !e.IsDir() {
			ps = append(ps, AttemptsDirName+"/"+e.Name())
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
	// attempts/ replaced by a link (or anything but ralphd's directory):
	// moved aside, untouched, and made again, before anything is listed or
	// put back in it.
	if d, err := s.root.OpenDir(AttemptsDirName); err == nil {
		_ = d.Close()
	} else if atomicfile.IsForeign(err) {
		if err := s.ensureDir(AttemptsDirName); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", s.path(AttemptsDirName), err))
		} else {
			restored = append(restored, AttemptsDirName)
		}
	}
	// Not through the redacting writer: these are the bytes ralphd
	// wrote, already redacted.
	put := func(p string, data []byte) error {
		return atomicWriter{hook: s.writer.hook}.write(s.root, p, data, filePerm)
	}
	for _, p := range s.sealedPaths() {
		want, had := s.seal.files[p]
		got, err := s.read(p)
		// A directory, FIFO, symlink or hard link put in a sealed file's
		// place, or on the way to it (attempts/ replaced by a link), is
		// a change too: it is moved aside, kept untouched, and the file
		// put back; nothing is written or removed through it.
		exists := !errors.Is(err, fs.ErrNotExist)
		switch {
		case !had && !exists:
			continue
		case had && err == nil && bytes.Equal(got, want):
			continue
		case unusable(err):
			if atomicfile.IsForeign(err) {
				err = s.setAside(p)
			} else {
				_, err = s.moveAside(p) // too large
			}
			if err == nil && had {
				err = put(p, want)
			}
		case !had:
			err = s.root.Remove(p)
			if atomicfile.IsForeign(err) {
				err = s.setAside(p)
			}
		default:
			err = put(p, want)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("restore %s: %w", s.path(p), err))
			continue
		}
		restored = append(restored, p)
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

// put writes the state file name atomically, as ralphd's own write (see
// reseal). The caller holds s.mu.
func (s *Store) put(name string, data []byte) error {
	if err := s.writeFile(name, data); err != nil {
		return err
	}
	s.reseal(name, s.redact(data))
	return nil
}

// putJSON writes v to the state file name as one line of JSON, as put
// does. The caller holds s.mu.
func (s *Store) putJSON(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.put(name, append(data, '\n'))
}

// drop removes the state file name, as ralphd's own removal. A missing
// file is not an error; something foreign in its place is moved aside
// with a warning, never deleted. The caller holds s.mu.
func (s *Store) drop(name string) error {
	err := s.root.Remove(name)
	if atomicfile.IsForeign(err) {
		err = s.setAside(name)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.resealRemoved(name)
	return nil
}
