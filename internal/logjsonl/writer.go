package logjsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// DefaultMaxLine is the default bound on the length of one agent line.
// A line up to this long is held whole, so that a JSON line can be checked
// and copied verbatim; a longer line is written as wrapped chunks of at
// most ChunkSize bytes.
const DefaultMaxLine = 16 << 20

// ChunkSize is the most bytes of an over-long line one chunk record holds
// (MaxLine when that is smaller). Once a line is known to be too long, its
// chunks are written as they fill, so the records stay small.
const ChunkSize = 1 << 20

// DefaultRetention is how many run logs [Create] keeps when given 0.
const DefaultRetention = 10

// FileTimeLayout is the layout of a legacy log file's name without its
// extension, in local time, as the bash loop named its logs. ralphd names
// its logs after the run ID ([CreateRun]); [Create] still writes this
// layout.
const FileTimeLayout = LegacyLogLayout

// maxSuffix bounds the "-N" suffixes Create tries for a taken name.
const maxSuffix = 1000

// logPerm is the mode Create gives a run log, and a restore keeps.
const logPerm = 0o600

// ErrClosed is returned by writes to a closed Writer.
var ErrClosed = errors.New("log writer is closed")

// Options configures a Writer. The zero value is ready to use.
type Options struct {
	// Now is the clock for event timestamps; nil means time.Now.
	Now func() time.Time
	// MaxLine bounds the bytes of one agent line held in memory; 0 means
	// DefaultMaxLine. A longer line is written as several wrapped chunks.
	// Keep it at 4 or more, or a chunk may split a UTF-8 character.
	MaxLine int
	// Redact, when set, is applied to every batch of complete records
	// before it is written (a secret's value replaced, each line kept
	// valid JSON). An agent line is then verbatim except for the secrets.
	Redact func([]byte) []byte
}

// Writer writes one run's log. All its methods are safe for concurrent use:
// each record reaches the underlying writer in a single Write call made
// under one mutex, so records never interleave inside a line.
type Writer struct {
	mu     sync.Mutex
	out    io.Writer
	file   *os.File // the file Create opened, closed by Close; nil for New
	closed bool

	path    string
	now     func() time.Time
	maxLine int
	redact  func([]byte) []byte

	removed []string
	pruneEr error

	held *held // what Verify checks the file against; nil for New
}

// New returns a Writer that writes records to w. Close does not close w.
// For records appended by other processes ([AppendMeta]) not to be
// overwritten, a file behind w must be opened with O_APPEND.
func New(w io.Writer, opts Options) *Writer {
	lw := &Writer{out: w, now: opts.Now, maxLine: opts.MaxLine, redact: opts.Redact}
	if lw.now == nil {
		lw.now = time.Now
	}
	if lw.maxLine <= 0 {
		lw.maxLine = DefaultMaxLine
	}
	return lw
}

// CreateRun is [CreateWith] for the run runID: the file is <runID>.log, so
// a run has the same ID in its log as in its report, history and status.
func CreateRun(dir, runID string, retention int, opts Options) (*Writer, error) {
	if runID == "" || strings.ContainsAny(runID, `/\`) || runID[0] == '.' {
		return nil, fmt.Errorf("create log file: bad run ID %q", runID)
	}
	return create(dir, runID, retention, opts)
}

// create opens <base>.log in dir, or <base>-N.log when that is taken, and
// applies retention.
func create(dir, base string, retention int, opts Options) (*Writer, error) {
	// Through an atomicfile.Dir: dir itself must not be a link, and the
	// new file is made with O_EXCL|O_NOFOLLOW in it.
	d, err := atomicfile.MakeDirAll(dir, 0o700)
	if err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	defer d.Close()
	for i := 0; i < maxSuffix; i++ {
		name := base + ".log"
		if i > 0 {
			name = base + "-" + strconv.Itoa(i) + ".log"
		}
		path := filepath.Join(dir, name)
		f, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, logPerm)
		if errors.Is(err, fs.ErrExist) || atomicfile.IsForeign(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create log file: %w", err)
		}
		w := New(f, opts)
		w.file = f
		w.path = path
		w.hold(f)
		if retention == 0 {
			retention = DefaultRetention
		}
		if retention > 0 {
			w.removed, w.pruneEr = Prune(dir, retention, name)
		}
		return w, nil
	}
	return nil, fmt.Errorf("create log file: %d files named %s*.log already exist in %s; remove old logs", maxSuffix, base, dir)
}

// Path returns the path of the file Create opened, or "" for a Writer made
// by New.
func (w *Writer) Path() string { return w.path }

// Retention returns the old logs Create deleted and the error of the
// retention pass, if any.
func (w *Writer) Retention() (removed []string, err error) {
	return w.removed, w.pruneEr
}

// Meta writes one loop_meta record for event with data, stamped with the
// Writer's clock. See [MetaLine] for the format and what data may be.
func (w *Writer) Meta(event string, data any) error {
	line, err := MetaLine(event, w.now(), data)
	if err != nil {
		return err
	}
	return w.write(line)
}

// AgentLine writes one line the agent printed on stream. A trailing newline
// is dropped; a line holding more newlines is written as several lines. A
// StreamStdout line that is a JSON object is written verbatim; any other
// line is wrapped (see the package documentation). A line longer than the
// Writer's MaxLine is written as chunks.
func (w *Writer) AgentLine(stream string, line []byte) error {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	s := w.newSplitter(stream)
	if len(line) <= w.maxLine && bytes.IndexByte(line, '\n') < 0 {
		s.finish(line) // the common case: no copy
	} else {
		s.feed(line)
		s.endLine()
	}
	s.flush()
	return s.err
}

// CopyLines reads r to EOF and writes each line as AgentLine would,
// including a last line without a final newline. Its memory does not
// depend on the input: at most MaxLine bytes of the current line, a 64 KiB
// read buffer, and a batch of records of about 256 KiB plus one chunk
// record (at most ChunkSize bytes, up to 6 times that once escaped). Lines
// that arrive in the same read are written together in one Write, which
// keeps the cost per line low. After a write error CopyLines keeps reading
// r (and discards it) so that the process writing the pipe never blocks,
// and returns the first error at the end.
func (w *Writer) CopyLines(stream string, r io.Reader) error {
	s := w.newSplitter(stream)
	buf := make([]byte, readSize)
	for {
		n, err := r.Read(buf)
		if n > 0 && s.err == nil {
			s.feed(buf[:n])
			s.flush()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			// Keep what was read of an unfinished line.
			if s.err == nil && (len(s.pending) > 0 || s.chunk > 0) {
				s.endLine()
			}
			s.flush()
			if s.err != nil {
				return s.err
			}
			return fmt.Errorf("read agent %s: %w", stream, err)
		}
	}
	if s.err == nil && (len(s.pending) > 0 || s.chunk > 0) {
		s.endLine()
		s.flush()
	}
	return s.err
}

// StreamWriter returns a writer for one stream of agent output: the bytes
// written to it, in pieces of any size, are split into lines and logged as
// CopyLines would, with the same bounded memory. It suits a pipe that is
// also read for another purpose, through io.TeeReader. Its Write never
// fails, so that a log problem cannot break that reader; Close logs a last
// line that has no final newline and returns the first error. One
// goroutine at a time may use it.
func (w *Writer) StreamWriter(stream string) io.WriteCloser {
	return &streamWriter{s: w.newSplitter(stream)}
}

type streamWriter struct {
	s      *splitter
	closed bool
}

// Write logs the complete lines in p and keeps the rest for later.
func (sw *streamWriter) Write(p []byte) (int, error) {
	if sw.s.err == nil && !sw.closed {
		sw.s.feed(p)
		sw.s.flush()
	}
	return len(p), nil
}

// Close logs an unfinished last line and returns the first error.
func (sw *streamWriter) Close() error {
	if !sw.closed && sw.s.err == nil && (len(sw.s.pending) > 0 || sw.s.chunk > 0) {
		sw.s.endLine()
		sw.s.flush()
	}
	sw.closed = true
	return sw.s.err
}

// Close closes the file Create opened. Writes after Close fail with
// ErrClosed. Close is safe to call more than once.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.file == nil {
		return nil
	}
	if err := w.file.Close(); err != nil {
		return fmt.Errorf("close log file: %w", err)
	}
	return nil
}

// write writes p, one or more complete records, in a single Write call.
func (w *Writer) write(p []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.redact != nil {
		p = w.redact(p)
	}
	n, err := w.out.Write(p)
	if w.held != nil {
		w.held.record(p[:n])
	}
	if err != nil {
		return fmt.Errorf("write log: %w", err)
	}
	return nil
}
