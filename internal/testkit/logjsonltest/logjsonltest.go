// Package logjsonltest provides a synthetic agent stream and a throughput
// measurement of logjsonl's Writer, for benchmarks and for measuring the
// writer's peak memory from a separate program.
package logjsonltest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ralphd/ralphd/internal/logjsonl"
)

// text is filler for assistant messages and tool output.
const text = "Reading the retry package: Backoff doubles the delay after each failure and caps it at MaxDelay. " +
	"The test expects 400ms after two failures but gets 200ms because the first attempt is not counted. " +
	"I will change the loop to count from one, then run go test ./... again and close the issue if it passes. "

// cycleLines is how many different lines Stream repeats.
const cycleLines = 100

// stream serves a cycle of newline-terminated lines shaped like Claude
// Code's stream-json, two in a hundred of them not JSON (as stderr noise
// mixed into stdout would be).
type stream struct {
	left  int64    // bytes still to produce
	lines [][]byte // the cycle
	n     int      // lines produced
	line  []byte   // the current line
	off   int      // bytes of line already returned
}

// Stream returns a reader of exactly size bytes of lines shaped like Claude
// Code's stream-json (assistant text, tool calls, tool results), with two
// lines in a hundred that are not JSON. It repeats a cycle of 100 lines
// (about 150 KB) built once, so it costs little CPU and constant memory
// however large size is; the same size gives the same bytes.
func Stream(size int64) io.Reader {
	s := &stream{left: size}
	for n := range cycleLines {
		s.lines = append(s.lines, makeLine(n))
	}
	return s
}

// Read fills p with the next bytes of the stream.
func (s *stream) Read(p []byte) (int, error) {
	if s.left <= 0 {
		return 0, io.EOF
	}
	total := 0
	for len(p) > 0 && s.left > 0 {
		if s.off == len(s.line) {
			s.next()
		}
		n := copy(p, s.line[s.off:])
		s.off += n
		s.left -= int64(n)
		total += n
		p = p[n:]
	}
	return total, nil
}

// next moves to the next line of the cycle. When fewer than 64 bytes would
// be left after it, it is replaced by a non-JSON line that fills exactly
// what is left, so the stream ends with a newline at its size.
func (s *stream) next() {
	s.line = s.lines[s.n%len(s.lines)]
	s.n++
	s.off = 0
	if rest := s.left; int64(len(s.line)) > rest || rest-int64(len(s.line)) < 64 {
		s.line = append(bytes.Repeat([]byte{'x'}, int(rest-1)), '\n')
	}
}

// makeLine builds line n of the cycle.
func makeLine(n int) []byte {
	var b []byte
	switch {
	case n%50 == 0:
		b = fmt.Appendf(b, "warning: slow filesystem detected (line %d)", n)
	case n%10 == 1:
		b = fmt.Appendf(b, `{"type":"assistant","message":{"model":"claude-sonnet-4-5","id":"msg_%08d","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_%08d","name":"Bash","input":{"command":"go test ./... -run TestBackoff -count=1","description":"Run the tests"}}],"stop_reason":null,"usage":{"input_tokens":4,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"3f1c9a2e-7b4d-4e8a-9c21-5d6e7f809a1b","uuid":"0b6e1c1e-1111-4a2b-8c3d-%012d"}`, n, n, n)
	case n%10 == 2:
		b = fmt.Appendf(b, `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_%08d","type":"tool_result","content":"--- FAIL: TestBackoff (0.00s)\n    backoff_test.go:42: got 200ms, want 400ms\nFAIL\n%s","is_error":true}]},"parent_tool_use_id":null,"session_id":"3f1c9a2e-7b4d-4e8a-9c21-5d6e7f809a1b","uuid":"0b6e1c1e-1111-4a2b-8c3d-%012d"}`, n, strings.Repeat(text, 3), n)
	default:
		b = fmt.Appendf(b, `{"type":"assistant","message":{"model":"claude-sonnet-4-5","id":"msg_%08d","type":"message","role":"assistant","content":[{"type":"text","text":"%s"}],"stop_reason":null,"usage":{"input_tokens":4,"cache_creation_input_tokens":2810,"cache_read_input_tokens":14707,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"3f1c9a2e-7b4d-4e8a-9c21-5d6e7f809a1b","uuid":"0b6e1c1e-1111-4a2b-8c3d-%012d"}`, n, strings.Repeat(text, 1+n%5), n)
	}
	return append(b, '\n')
}

// Result is what Measure found.
type Result struct {
	Bytes        int64         // bytes piped through each path per round
	Rounds       int           // rounds run; the durations are the best of them
	LogDuration  time.Duration // Writer.CopyLines from a pipe to a file
	CopyDuration time.Duration // io.Copy from a pipe to a file
	LogMBps      float64       // MB/s (10^6 bytes) through CopyLines
	CopyMBps     float64       // MB/s through io.Copy
	Ratio        float64       // LogMBps / CopyMBps
	LogSize      int64         // size of the log written
	MaxRSS       int64         // peak resident set size of this process so far, in bytes
}

// Measure pipes size bytes of Stream through an os.Pipe into
// Writer.CopyLines writing a log file in dir, and the same bytes through
// another pipe with a plain io.Copy into a file, alternately, rounds times
// (at least once), and reports the best time of each, both speeds, and the
// process's peak RSS (getrusage). Each file is removed after its round so
// that write-back of one does not slow the next. Run it in a fresh process
// per size to see whether peak memory grows with the input; a directory on
// tmpfs (/dev/shm) takes the disk out of the comparison.
func Measure(dir string, size int64, rounds int) (Result, error) {
	res := Result{Bytes: size, Rounds: max(rounds, 1)}
	logSink := func(dst *os.File, src io.Reader) error {
		return logjsonl.New(dst, logjsonl.Options{}).CopyLines(logjsonl.StreamStdout, src)
	}
	copySink := func(dst *os.File, src io.Reader) error {
		_, err := io.Copy(dst, src)
		return err
	}
	for range res.Rounds {
		d, _, err := timePipe(size, filepath.Join(dir, "measure-copy.log"), copySink)
		if err != nil {
			return res, fmt.Errorf("measure io.Copy: %w", err)
		}
		if res.CopyDuration == 0 || d < res.CopyDuration {
			res.CopyDuration = d
		}
		d, n, err := timePipe(size, filepath.Join(dir, "measure-log.log"), logSink)
		if err != nil {
			return res, fmt.Errorf("measure CopyLines: %w", err)
		}
		if res.LogDuration == 0 || d < res.LogDuration {
			res.LogDuration = d
		}
		res.LogSize = n
	}
	res.LogMBps = float64(size) / 1e6 / res.LogDuration.Seconds()
	res.CopyMBps = float64(size) / 1e6 / res.CopyDuration.Seconds()
	res.Ratio = res.LogMBps / res.CopyMBps
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		res.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return res, nil
}

// timePipe feeds Stream(size) into a pipe from a goroutine and times sink
// reading the pipe into a new file at path. It returns the file's size and
// removes it.
func timePipe(size int64, path string, sink func(dst *os.File, src io.Reader) error) (time.Duration, int64, error) {
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(path)
	defer dst.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, 0, err
	}
	defer pr.Close()
	src := Stream(size)
	fed := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := io.Copy(pw, src)
		fed <- errors.Join(err, pw.Close())
	}()
	err = sink(dst, pr)
	d := time.Since(start)
	if err := errors.Join(err, <-fed); err != nil {
		return 0, 0, err
	}
	info, err := dst.Stat()
	if err != nil {
		return 0, 0, err
	}
	return d, info.Size(), nil
}
