package standin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// On-disk layout, mirroring real bd 1.0.5's embedded Dolt tree:
//
//	.beads/
//	  config.yaml, metadata.json, .local_version, .gitignore
//	  interactions.jsonl            append-only audit log
//	  last-touched                  id of the last touched issue
//	  embeddeddolt/.lock            flock'ed by every command
//	  embeddeddolt/<db>/.dolt/noms/manifest      root hash (changes on writes)
//	  embeddeddolt/<db>/.dolt/noms/journal.idx   index (grows on writes)
//	  embeddeddolt/<db>/.dolt/noms/vvvv…         journal (grows on writes)
//	  embeddeddolt/<db>/.dolt/standin.json       the stand-in's issue data
//
// Read-only commands rewrite manifest, journal.idx and the journal's tail
// in place with identical bytes, so their mtimes change but not their
// content, as real bd's do.
const (
	beadsDirName = ".beads"
	doltDirName  = "embeddeddolt"
	// redirectFileName is the file in .beads that sends bd to another
	// .beads directory.
	redirectFileName = "redirect"
	journalName      = "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"
	dataFileName     = "standin.json"
	dataVersion      = 1
	touchTailBytes   = 4096
)

// errNoDB is returned when no beads workspace can be found.
var errNoDB = errors.New("no beads database found")

// workspace is a located .beads directory.
type workspace struct {
	beadsDir string // absolute path of .beads
	dbName   string // embedded database name (the prefix at init)
	// server is set in server mode: the data lives in the stand-in's
	// "Dolt server" (a directory shared by every clone), not in .beads.
	server *serverAddr
	// storeDir is the server's directory for server mode, "" otherwise.
	storeDir string
	// redirectedFrom is the .beads directory whose redirect file led
	// here, "" when none was followed.
	redirectedFrom string
}

// metadata is .beads/metadata.json.
type metadata struct {
	Backend        string `json:"backend"`
	Database       string `json:"database"`
	DoltMode       string `json:"dolt_mode"`
	DoltServerHost string `json:"dolt_server_host,omitempty"`
	DoltServerPort int    `json:"dolt_server_port,omitempty"`
	DoltDatabase   string `json:"dolt_database,omitempty"`
	ProjectID      string `json:"project_id"`
}

func (w *workspace) repoRoot() string { return filepath.Dir(w.beadsDir) }
func (w *workspace) doltRoot() string {
	if w.storeDir != "" {
		return w.storeDir
	}
	return filepath.Join(w.beadsDir, doltDirName)
}
func (w *workspace) doltDir() string      { return filepath.Join(w.doltRoot(), w.dbName, ".dolt") }
func (w *workspace) nomsDir() string      { return filepath.Join(w.doltDir(), "noms") }
func (w *workspace) manifestPath() string { return filepath.Join(w.nomsDir(), "manifest") }
func (w *workspace) journalIdxPath() string {
	return filepath.Join(w.nomsDir(), "journal.idx")
}
func (w *workspace) journalPath() string { return filepath.Join(w.nomsDir(), journalName) }
func (w *workspace) dataPath() string    { return filepath.Join(w.doltDir(), dataFileName) }
func (w *workspace) lockPath() string    { return filepath.Join(w.doltRoot(), ".lock") }

// readMetadata loads .beads/metadata.json.
func readMetadata(beadsDir string) (metadata, error) {
	var m metadata
	b, err := os.ReadFile(filepath.Join(beadsDir, "metadata.json"))
	if err != nil {
		return m, fmt.Errorf("read metadata: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("parse metadata: %w", err)
	}
	if m.Database == "" {
		return m, fmt.Errorf("parse metadata: no database name in %s", filepath.Join(beadsDir, "metadata.json"))
	}
	return m, nil
}

// openWorkspace accepts a .beads directory, its embeddeddolt directory, or
// a directory containing .beads.
func openWorkspace(p string) (*workspace, error) {
	p = filepath.Clean(p)
	candidates := []string{p, filepath.Join(p, beadsDirName)}
	if filepath.Base(p) == doltDirName {
		candidates = append([]string{filepath.Dir(p)}, candidates...)
	}
	for _, c := range candidates {
		if ws, err := workspaceVia(c); err == nil {
			return ws, nil
		}
	}
	return nil, errNoDB
}

// workspaceAt opens the workspace whose .beads directory is beadsDir.
func workspaceAt(beadsDir string) (*workspace, error) {
	m, err := readMetadata(beadsDir)
	if err != nil {
		return nil, err
	}
	ws := &workspace{beadsDir: beadsDir, dbName: m.Database}
	if m.DoltMode == "server" {
		if m.DoltDatabase == "" {
			return nil, fmt.Errorf("parse metadata: server mode without dolt_database in %s", filepath.Join(beadsDir, "metadata.json"))
		}
		ws.server = &serverAddr{host: m.DoltServerHost, port: m.DoltServerPort, database: m.DoltDatabase}
		// As in bd 1.0.5 (doltserver.DefaultConfig), the port file, once
		// written, comes before metadata.json's port.
		if b, err := os.ReadFile(filepath.Join(beadsDir, "dolt-server.port")); err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 {
				ws.server.port = p
			}
		}
		ws.dbName = m.DoltDatabase
	}
	return ws, nil
}

// workspaceVia opens the workspace beadsDir names: the one its redirect
// file points to when it has one that resolves, else beadsDir itself.
func workspaceVia(beadsDir string) (*workspace, error) {
	target := followRedirect(beadsDir)
	if target == "" {
		return workspaceAt(beadsDir)
	}
	ws, err := workspaceAt(target)
	if err != nil {
		return nil, err
	}
	ws.redirectedFrom = beadsDir
	return ws, nil
}

// followRedirect returns the .beads directory beadsDir's redirect file
// names, or "" when it has none, or its target is not a directory. Like bd
// 1.0.5 (FollowRedirect): the first line that is not blank or a "#"
// comment, relative to the project root (beadsDir's parent), with links
// resolved; one level only (a redirect in the target is not followed).
func followRedirect(beadsDir string) string {
	b, err := os.ReadFile(filepath.Join(beadsDir, redirectFileName))
	if err != nil {
		return ""
	}
	var target string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			target = line
			break
		}
	}
	if target == "" {
		return ""
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(beadsDir), target)
	}
	if r, err := filepath.EvalSymlinks(target); err == nil {
		target = r
	}
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		return ""
	}
	return filepath.Clean(target)
}

// discover finds the workspace the way bd does: --db, then BEADS_DIR,
// then the main repository of the git worktree dir is in (bd finds it
// through git's common directory, so every worktree shares the main
// repository's tracker), then walking up from dir.
func discover(dir, dbFlag, beadsDirEnv string) (*workspace, error) {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	if dbFlag != "" {
		return openWorkspace(abs(dbFlag))
	}
	if beadsDirEnv != "" {
		return openWorkspace(abs(beadsDirEnv))
	}
	if main := worktreeMain(dir); main != "" {
		if ws, err := workspaceVia(filepath.Join(main, beadsDirName)); err == nil {
			return ws, nil
		}
	}
	for d := dir; ; {
		if ws, err := workspaceVia(filepath.Join(d, beadsDirName)); err == nil {
			return ws, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil, errNoDB
		}
		d = parent
	}
}

// worktreeMain returns the main repository's work tree when dir is inside
// a linked git worktree, and "" otherwise. Like git, it follows the
// worktree's ".git" file to its git dir and that dir's "commondir" file
// to the main repository's .git.
func worktreeMain(dir string) string {
	for d := dir; ; {
		dotGit := filepath.Join(d, ".git")
		st, err := os.Lstat(dotGit)
		if err == nil {
			if st.IsDir() {
				return "" // a main work tree
			}
			return mainFromGitFile(d, dotGit)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// mainFromGitFile reads a linked worktree's ".git" file ("gitdir: P") and
// returns the main work tree, or "" when it is not a linked worktree (a
// submodule, say) or anything is unreadable.
func mainFromGitFile(top, dotGit string) string {
	b, err := os.ReadFile(dotGit)
	if err != nil {
		return ""
	}
	gitDir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	gitDir = strings.TrimSpace(gitDir)
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(top, gitDir)
	}
	c, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return ""
	}
	common := strings.TrimSpace(string(c))
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitDir, common)
	}
	common = filepath.Clean(common)
	if filepath.Base(common) != ".git" {
		return "" // a bare main repository has no work tree
	}
	return filepath.Dir(common)
}

// lock takes the embedded database's exclusive lock, waiting for other bd
// processes until ctx ends. The returned function releases it.
func (w *workspace) lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(w.doltRoot(), 0o755); err != nil {
		return nil, fmt.Errorf("lock database: %w", err)
	}
	f, err := os.OpenFile(w.lockPath(), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock database: %w", err)
	}
	wait := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("lock database: %w", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			_ = f.Close()
			return nil, fmt.Errorf("lock database: %w", ctx.Err())
		case <-t.C:
		}
		if wait < 20*time.Millisecond {
			wait *= 2
		}
	}
}

// load reads the stored data.
func (w *workspace) load() (*database, error) {
	b, err := os.ReadFile(w.dataPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load database: %s has no bd stand-in data (%s); it was not created by the stand-in's `bd init`, and real bd's Dolt files cannot be read", w.beadsDir, w.dataPath())
	}
	if err != nil {
		return nil, fmt.Errorf("load database: %w", err)
	}
	db := &database{}
	if err := json.Unmarshal(b, db); err != nil {
		return nil, fmt.Errorf("load database %s: %w", w.dataPath(), err)
	}
	db.index()
	return db, nil
}

// rootHash is a Dolt-looking (base32, 0-9a-v) 20-byte hash.
var doltBase32 = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

func rootHash(b []byte) string {
	sum := sha256.Sum256(b)
	return doltBase32.EncodeToString(sum[:20])
}

// commit stores db and records the write the way Dolt does: the journal
// grows by one record, journal.idx gains an entry and the manifest's root
// hash changes.
func (w *workspace) commit(db *database, op string) error {
	data, err := json.MarshalIndent(db, "", " ")
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := os.MkdirAll(w.nomsDir(), 0o755); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := atomicfile.Write(w.dataPath(), data, 0o644); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	root := rootHash(data)

	// Journal record: length, kind, root hash, operation.
	var rec bytes.Buffer
	payload := []byte(op)
	_ = binary.Write(&rec, binary.BigEndian, uint32(1+20+len(payload)))
	rec.WriteByte(2)
	sum := sha256.Sum256(data)
	rec.Write(sum[:20])
	rec.Write(payload)
	jf, err := os.OpenFile(w.journalPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	st, err := jf.Stat()
	if err != nil {
		_ = jf.Close()
		return fmt.Errorf("commit: %w", err)
	}
	offset := st.Size()
	if _, err := jf.Write(rec.Bytes()); err != nil {
		_ = jf.Close()
		return fmt.Errorf("commit: %w", err)
	}
	if err := jf.Sync(); err != nil {
		_ = jf.Close()
		return fmt.Errorf("commit: %w", err)
	}
	if err := jf.Close(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}

	idx, err := os.ReadFile(w.journalIdxPath())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("commit: %w", err)
	}
	var entry [28]byte
	binary.BigEndian.PutUint64(entry[:8], uint64(offset))
	copy(entry[8:], sum[:20])
	idx = append(idx, entry[:]...)
	if err := atomicfile.Write(w.journalIdxPath(), idx, 0o644); err != nil {
		return fmt.Errorf("commit: %w", err)
	}

	prev, _ := os.ReadFile(w.manifestPath())
	lockHash := rootHash(append(prev, []byte(op)...))
	manifest := fmt.Sprintf("5:__DOLT__:%s:%s:00000000000000000000000000000000:%s:%d", lockHash, root, journalName, len(idx)/len(entry))
	if err := atomicfile.Write(w.manifestPath(), []byte(manifest), 0o644); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// touch rewrites the Dolt files a read opens with the bytes they already
// hold: mtimes change, content does not.
func (w *workspace) touch() error {
	for _, p := range []string{w.manifestPath(), w.journalIdxPath()} {
		if err := rewriteTail(p, -1); err != nil {
			return err
		}
	}
	return rewriteTail(w.journalPath(), touchTailBytes)
}

// rewriteTail writes the last n bytes of p (all of it when n < 0) back in
// place. A missing file is left alone.
func rewriteTail(p string, n int64) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("touch %s: %w", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("touch %s: %w", p, err)
	}
	off := int64(0)
	if n >= 0 && st.Size() > n {
		off = st.Size() - n
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("touch %s: %w", p, err)
	}
	if _, err := f.WriteAt(buf, off); err != nil {
		return fmt.Errorf("touch %s: %w", p, err)
	}
	if len(buf) == 0 {
		// Nothing to rewrite; still mark the file modified.
		now := time.Now()
		if err := os.Chtimes(p, now, now); err != nil {
			return fmt.Errorf("touch %s: %w", p, err)
		}
	}
	return nil
}

// writeLastTouched records the last touched issue id.
func (w *workspace) writeLastTouched(id string) error {
	if err := atomicfile.Write(filepath.Join(w.beadsDir, "last-touched"), []byte(id+"\n"), 0o644); err != nil {
		return fmt.Errorf("write last-touched: %w", err)
	}
	return nil
}

func (w *workspace) lastTouched() string {
	b, err := os.ReadFile(filepath.Join(w.beadsDir, "last-touched"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// appendInteraction adds one line to .beads/interactions.jsonl.
func (w *workspace) appendInteraction(line []byte) error {
	f, err := os.OpenFile(filepath.Join(w.beadsDir, "interactions.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("append interaction: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("append interaction: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("append interaction: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append interaction: %w", err)
	}
	return nil
}
