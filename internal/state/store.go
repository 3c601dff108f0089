package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// File and directory names inside a project's state directory.
const (
	MetadataFile    = "metadata.json"
	AttemptsFile    = "attempts.txt"
	HistoryFile     = "history.jsonl"
	RunningFile     = "running.json"
	LockFile        = "ralphd.lock"
	LogsDirName     = "logs"
	ReportsDirName  = "reports"
	AttemptsDirName = "attempts"
)

const (
	dirPerm  os.FileMode = 0o700
	filePerm os.FileMode = 0o600
)

// isoSeconds is the format of `date -Iseconds`, which the bash loop uses
// for created_at.
const isoSeconds = "2006-01-02T15:04:05-07:00"

// ProjectDir is the state directory of project id under root:
// <root>/projects/<id>.
func ProjectDir(root, id string) string {
	return filepath.Join(root, "projects", id)
}

// Store is one project's state directory. Its methods are safe for
// concurrent use by the goroutines of one process; across processes, the
// project lock (Store.Lock) decides who may write.
//
// Recoverable problems (a corrupt line moved aside, a bad history line
// skipped) do not fail an operation: they are queued as warnings, which the
// caller collects with Warnings and reports.
type Store struct {
	// Now is the clock. Open sets it to time.Now; tests may replace it
	// before calling other methods.
	Now func() time.Time

	id  Identity
	dir string
	// root is the state directory, opened once: every read, write,
	// listing and removal of a state file goes through it, so none
	// follows a link (see atomicfile.Dir and nofollow.go).
	root   *atomicfile.Dir
	writer atomicWriter
	// lockWait pauses between two tries of a contended lock.
	lockWait func()

	mu *sync.Mutex // serialises read-modify-write of files; shared by worker views
	// seal is the seal on the state files (see seal.go), shared by the
	// worker views: one worker's agent may run while another's ends.
	seal     *sealState
	warnMu   sync.Mutex
	warnings []string
	// worker names the worker whose running record this view reads and
	// writes ("" for the project's own running.json); see ForWorker.
	worker string
}

// Open opens (creating when needed) the state directory of project id
// under root, with its logs, reports and attempts subdirectories (all
// 0700), and writes or updates metadata.json.
//
// metadata.json keeps the bash loop's keys (project_id, project_path,
// remote_url, created_at; existing values are never changed) and ralphd's
// own (ralphd_version, and last_run_* from MarkRun). Keys written by
// others are preserved. An unparseable metadata.json is moved aside to
// metadata.json.corrupt-<timestamp>, with a warning, and written afresh.
func Open(ctx context.Context, root string, id Identity, version string) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	if !validProjectID(id.ID) {
		return nil, fmt.Errorf("open state: invalid project id %q (want 12 lowercase hex characters)", id.ID)
	}
	if root == "" {
		return nil, errors.New("open state: no state directory given; set RALPH_STATE_DIR or XDG_STATE_HOME")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	s := &Store{Now: time.Now, id: id, dir: ProjectDir(abs, id.ID), mu: new(sync.Mutex), seal: new(sealState), lockWait: func() { time.Sleep(10 * time.Millisecond) }}
	if s.root, err = openProjectDir(abs, id.ID); err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	s.mu.Lock()
	for _, d := range []string{LogsDirName, ReportsDirName, AttemptsDirName} {
		err = s.ensureDir(d)
		if err != nil {
			break
		}
	}
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	s.setAsideOdd()
	if err := s.updateMetadata(func(m *Metadata) {
		if version != "" {
			m.RalphdVersion = version
		}
	}); err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	return s, nil
}

func validProjectID(id string) bool {
	if len(id) != 12 {
		return false
	}
	for _, c := range []byte(id) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Identity returns the identity the store was opened with.
func (s *Store) Identity() Identity { return s.id }

// Dir returns the project's state directory.
func (s *Store) Dir() string { return s.dir }

// LogsDir returns the directory for JSONL logs.
func (s *Store) LogsDir() string { return filepath.Join(s.dir, LogsDirName) }

// SetRedact makes the store apply redact to everything it writes
// (attempt records, judgements, history, reports), so that a secret in a
// command's output never reaches a state file. Call it before any write.
func (s *Store) SetRedact(redact func([]byte) []byte) { s.writer.redact = redact }

// redact applies the store's redaction (SetRedact) to data.
func (s *Store) redact(data []byte) []byte {
	if s.writer.redact == nil {
		return data
	}
	return s.writer.redact(data)
}

// ReportsDir returns the directory for end-of-run reports.
func (s *Store) ReportsDir() string { return filepath.Join(s.dir, ReportsDirName) }

// AttemptsDir returns the directory for the verbatim per-issue attempt
// records (attempts/<issue>.md).
func (s *Store) AttemptsDir() string { return filepath.Join(s.dir, AttemptsDirName) }

// Warnings returns the warnings queued since the last call, and clears
// them. Each is one sentence for a human, naming the file concerned.
func (s *Store) Warnings() []string {
	s.warnMu.Lock()
	defer s.warnMu.Unlock()
	w := s.warnings
	s.warnings = nil
	return w
}

func (s *Store) warn(format string, args ...any) {
	s.warnMu.Lock()
	defer s.warnMu.Unlock()
	s.warnings = append(s.warnings, fmt.Sprintf(format, args...))
}

func (s *Store) path(name string) string { return filepath.Join(s.dir, name) }

// RemoveStaleTemps deletes temp files left in the state directory by a
// write that was interrupted by a crash. Call it only while holding the
// project lock, so no other ralphd is writing. It returns the names it
// removed.
func (s *Store) RemoveStaleTemps() ([]string, error) {
	entries, err := s.root.ReadDir(".")
	if err != nil {
		return nil, fmt.Errorf("remove stale temp files: %w", err)
	}
	var removed []string
	for _, e := range entries {
		if !atomicfile.IsTemp(e.Name()) {
			continue
		}
		err := s.root.Remove(e.Name())
		if atomicfile.IsForeign(err) {
			// Named like ralphd's temp file, but not one: left alone.
			s.warn("%v; it is named like a temp file of ralphd's, but ralphd did not make it, so it was left alone", err)
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("remove stale temp files: %w", err)
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// setAsideOdd moves aside whatever stands in place of one of the state
// files and is not a file ralphd made: a directory, FIFO, symlink, device
// or hard link that ralphd never makes there, and that would make a read
// fail, block, never end or reach a file of the user's. Each is kept under
// a corrupt-<time> name, with a warning, so nothing is lost and the run
// goes on as if the file were missing. A failure to move one is left to
// the operation that meets it.
func (s *Store) setAsideOdd() {
	// The lock file too: no ralphd can hold a lock on one that is not a
	// regular file, since taking it would have failed the same way.
	names := []string{MetadataFile, AttemptsFile, HistoryFile, RunningFile, BaselineFile, TrackerPinFile, ReadWindowsFile, TrackerHeldFile, TrackerHeldDeltaFile, TreeWorkFile, LockFile}
	names = append(names, s.workerFiles()...)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range names {
		if err := s.root.Check(name); atomicfile.IsForeign(err) {
			_ = s.setAsideFound(name, err)
		}
	}
}

// workerFiles lists the workers' running records and baselines in the
// state directory.
func (s *Store) workerFiles() []string {
	entries, _ := s.root.ReadDir(".")
	var names []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".json") && (strings.HasPrefix(n, runningPrefix) || strings.HasPrefix(n, baselinePrefix)) {
			names = append(names, n)
		}
	}
	return names
}

// corruptName returns a new, unused name for a corrupt copy of name:
// <name>.corrupt-<UTC timestamp>, with -2, -3... added on a collision.
func (s *Store) corruptName(name string) string {
	base := name + ".corrupt-" + s.Now().UTC().Format("20060102T150405Z")
	p := base
	for i := 2; ; i++ {
		if _, err := s.root.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p
		}
		p = fmt.Sprintf("%s-%d", base, i)
	}
}

// moveAside renames name, an unreadable state file or whatever stands in
// its place, to a corrupt-<timestamp> name, so it is kept for a human to
// look at, and returns the new name's path. It moves the name only: a
// link is moved, never followed.
func (s *Store) moveAside(name string) (string, error) {
	var dst string
	for range 10 {
		dst = s.corruptName(name)
		err := s.root.Rename(name, dst)
		if errors.Is(err, fs.ErrExist) {
			continue // made meanwhile
		}
		if err != nil {
			return "", fmt.Errorf("move %s aside: %w", s.path(name), err)
		}
		break
	}
	dir := "."
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		dir = name[:i]
	}
	if err := s.syncDir(dir); err != nil {
		return s.path(dst), fmt.Errorf("move %s aside: %w", s.path(name), err)
	}
	return s.path(dst), nil
}

// Metadata is metadata.json. The first four fields are the bash loop's;
// the rest are ralphd's. Keys neither knows are kept in Other, verbatim.
type Metadata struct {
	ProjectID     string
	ProjectPath   string
	RemoteURL     string
	CreatedAt     string // as written, `date -Iseconds` format
	RalphdVersion string
	LastRunAt     string // RFC 3339
	LastRunID     string
	LastRunMode   string
	// Other holds every other key with its raw JSON value.
	Other map[string]json.RawMessage
}

// metadataKeys lists the known keys in the order they are written: the
// bash loop's order first.
var metadataKeys = [...]string{
	"project_id", "project_path", "remote_url", "created_at",
	"ralphd_version", "last_run_at", "last_run_id", "last_run_mode",
}

func (m *Metadata) field(key string) *string {
	switch key {
	case "project_id":
		return &m.ProjectID
	case "project_path":
		return &m.ProjectPath
	case "remote_url":
		return &m.RemoteURL
	case "created_at":
		return &m.CreatedAt
	case "ralphd_version":
		return &m.RalphdVersion
	case "last_run_at":
		return &m.LastRunAt
	case "last_run_id":
		return &m.LastRunID
	case "last_run_mode":
		return &m.LastRunMode
	}
	return nil
}

// ParseMetadata parses metadata.json. It fails when data is not a JSON
// object or a known key's value is not a string.
func ParseMetadata(data []byte) (Metadata, error) {
	var raw map[string]json.RawMessage
	if !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) {
		return Metadata{}, errors.New("parse metadata: not a JSON object")
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Metadata{}, fmt.Errorf("parse metadata: %w", err)
	}
	var m Metadata
	for k, v := range raw {
		if f := m.field(k); f != nil {
			if err := json.Unmarshal(v, f); err != nil {
				return Metadata{}, fmt.Errorf("parse metadata: key %q: %w", k, err)
			}
			continue
		}
		if m.Other == nil {
			m.Other = map[string]json.RawMessage{}
		}
		m.Other[k] = v
	}
	return m, nil
}

// Encode renders m as indented JSON: the bash loop's keys first, in its
// order, then ralphd's (when set), then the other keys sorted.
func (m Metadata) Encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	add := func(k string, v []byte) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v)
	}
	for i, k := range metadataKeys {
		v := *m.field(k)
		if i >= 4 && v == "" {
			continue
		}
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode metadata: %w", err)
		}
		add(k, vb)
	}
	keys := make([]string, 0, len(m.Other))
	for k := range m.Other {
		if m.field(k) == nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		add(k, m.Other[k])
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// Metadata reads metadata.json. A missing file gives a zero Metadata and
// fs.ErrNotExist.
func (s *Store) Metadata() (Metadata, error) {
	data, err := s.read(MetadataFile)
	if err != nil {
		return Metadata{}, fmt.Errorf("read metadata: %w", err)
	}
	return ParseMetadata(data)
}

// MarkRun records in metadata.json that a run started now.
func (s *Store) MarkRun(runID, mode string) error {
	now := s.Now()
	return s.updateMetadata(func(m *Metadata) {
		m.LastRunAt = now.Format(time.RFC3339)
		m.LastRunID = runID
		m.LastRunMode = mode
	})
}

// updateMetadata reads metadata.json (or starts a new one), fills the bash
// loop's keys when missing, applies change and writes the file if it
// differs.
func (s *Store) updateMetadata(change func(*Metadata)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.path(MetadataFile)
	old, err := s.read(MetadataFile)
	var m Metadata
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case unusable(err):
		dst, mvErr := s.moveAside(MetadataFile)
		if mvErr != nil {
			return fmt.Errorf("read metadata: %w; %w", err, mvErr)
		}
		s.warn("%v; it was moved to %s and a new one was written", err, dst)
	case err != nil:
		return fmt.Errorf("read metadata: %w", err)
	default:
		m, err = ParseMetadata(old)
		if err != nil {
			dst, mvErr := s.moveAside(MetadataFile)
			if mvErr != nil {
				return mvErr
			}
			s.warn("%s could not be parsed (%v); it was moved to %s and a new one was written", path, err, dst)
			m, old = Metadata{}, nil
		}
	}
	if m.ProjectID == "" {
		m.ProjectID = s.id.ID
	}
	if m.ProjectPath == "" {
		m.ProjectPath = s.id.TopLevel
	}
	if m.RemoteURL == "" {
		m.RemoteURL = s.id.RemoteURL
		if m.RemoteURL == "" {
			m.RemoteURL = NoRemote
		}
	}
	if m.CreatedAt == "" {
		m.CreatedAt = s.Now().Format(isoSeconds)
	}
	change(&m)
	data, err := m.Encode()
	if err != nil {
		return err
	}
	if bytes.Equal(data, old) {
		return nil
	}
	if err := s.writeFile(MetadataFile, data); err != nil {
		return fmt.Errorf("write metadata: %w", err)
	}
	return nil
}
