package logjsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
)

var testTime = time.Date(2026, 1, 28, 15, 30, 0, 0, time.UTC)

func fixedClock() time.Time { return testTime }

func TestMetaLine(t *testing.T) {
	cost := 0.0871345
	tests := []struct {
		name  string
		event string
		ts    time.Time
		data  any
		want  string
	}{
		{
			name:  "iteration_start as in the issue",
			event: EventIterationStart,
			ts:    testTime,
			data:  IterationStart{Iteration: 1, IssueID: "bd-abc", Mode: "build"},
			want:  `{"type":"loop_meta","event":"iteration_start","timestamp":"2026-01-28T15:30:00Z","data":{"iteration":1,"issue_id":"bd-abc","mode":"build"}}` + "\n",
		},
		{
			name:  "iteration_end keeps the bash keys first",
			event: EventIterationEnd,
			ts:    testTime,
			data: &IterationEnd{Iteration: 1, ExitCode: 0, DurationSeconds: 45, Outcome: "ok", Turns: 3,
				CostUSD: &cost, Tokens: &agent.Tokens{InputTokens: 10, OutputTokens: 412}},
			want: `{"type":"loop_meta","event":"iteration_end","timestamp":"2026-01-28T15:30:00Z","data":{"iteration":1,"exit_code":0,"duration_seconds":45,"outcome":"ok","turns":3,"cost_usd":0.0871345,"tokens":{"input_tokens":10,"output_tokens":412}}}` + "\n",
		},
		{
			name:  "nil data is an empty object",
			event: "sweep",
			ts:    testTime,
			data:  nil,
			want:  `{"type":"loop_meta","event":"sweep","timestamp":"2026-01-28T15:30:00Z","data":{}}` + "\n",
		},
		{
			name:  "nil pointer is an empty object",
			event: EventRunEnd,
			ts:    testTime,
			data:  (*RunEnd)(nil),
			want:  `{"type":"loop_meta","event":"run_end","timestamp":"2026-01-28T15:30:00Z","data":{}}` + "\n",
		},
		{
			name:  "fields keep their order and are not HTML-escaped",
			event: EventDecision,
			ts:    time.Date(2026, 1, 28, 16, 30, 0, 999, time.FixedZone("CET", 3600)),
			data:  Fields{{"z", 1}, {"a", "<promise>COMPLETE</promise> & more"}, {"m", []string{"x"}}},
			want:  `{"type":"loop_meta","event":"decision","timestamp":"2026-01-28T15:30:00Z","data":{"z":1,"a":"<promise>COMPLETE</promise> & more","m":["x"]}}` + "\n",
		},
		{
			name:  "maps are sorted",
			event: EventPlanChanges,
			ts:    testTime,
			data:  map[string]int{"created": 2, "closed": 1},
			want:  `{"type":"loop_meta","event":"plan_changes","timestamp":"2026-01-28T15:30:00Z","data":{"closed":1,"created":2}}` + "\n",
		},
		{
			name:  "raw JSON is compacted",
			event: EventSweep,
			ts:    testTime,
			data:  json.RawMessage("{ \"b\" : [1, 2],\n \"a\": {} }"),
			want:  `{"type":"loop_meta","event":"sweep","timestamp":"2026-01-28T15:30:00Z","data":{"b":[1,2],"a":{}}}` + "\n",
		},
		{
			name:  "bd_call with a nil exit code",
			event: EventBDCall,
			ts:    testTime,
			data:  bdCallData{Argv: []string{"bd", "delete", "bd-c3d4"}, Mode: "build", Allowed: false, Reason: "BUILD may not delete issues"},
			want:  `{"type":"loop_meta","event":"bd_call","timestamp":"2026-01-28T15:30:00Z","data":{"argv":["bd","delete","bd-c3d4"],"mode":"build","allowed":false,"reason":"BUILD may not delete issues"}}` + "\n",
		},
		{
			name:  "run_start carries the schema version",
			event: EventRunStart,
			ts:    testTime,
			data:  RunStart{SchemaVersion: SchemaVersion, Mode: "build", MaxIterations: 50, Version: "v0.1.0", ProjectID: "abc123def456", Agent: "claude"},
			want:  `{"type":"loop_meta","event":"run_start","timestamp":"2026-01-28T15:30:00Z","data":{"schema_version":1,"mode":"build","max_iterations":50,"ralphd_version":"v0.1.0","project_id":"abc123def456","agent":"claude"}}` + "\n",
		},
		{
			name:  "network_refused names the host and port",
			event: EventNetworkRefused,
			ts:    testTime,
			data:  NetworkRefused{Iteration: 3, IssueID: "bd-a1", Host: "evil.example:443"},
			want:  `{"type":"loop_meta","event":"network_refused","timestamp":"2026-01-28T15:30:00Z","data":{"iteration":3,"issue_id":"bd-a1","host":"evil.example:443"}}` + "\n",
		},
		{
			name:  "quota wait with a reset time",
			event: EventQuotaWaitStart,
			ts:    testTime,
			data:  QuotaWaitStart{Agent: "claude", ResetAt: testTime.Add(time.Hour), WaitSeconds: 3660},
			want:  `{"type":"loop_meta","event":"quota_wait_start","timestamp":"2026-01-28T15:30:00Z","data":{"agent":"claude","reset_at":"2026-01-28T16:30:00Z","wait_seconds":3660}}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := MetaLine(tt.event, tt.ts, tt.data)
			is.NoErr(err)
			is.Equal(string(got), tt.want) // the exact bytes
		})
	}
}

func TestMetaLineErrors(t *testing.T) {
	tests := []struct {
		name  string
		event string
		data  any
	}{
		{"empty event", "", nil},
		{"number", EventSweep, 42},
		{"array", EventSweep, []int{1}},
		{"string", EventSweep, "x"},
		{"duplicate field", EventSweep, Fields{{"a", 1}, {"a", 2}}},
		{"unencodable field", EventSweep, Fields{{"c", make(chan int)}}},
		{"unencodable value", EventSweep, map[string]any{"c": make(chan int)}},
		{"raw array", EventSweep, json.RawMessage(`[1]`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := MetaLine(tt.event, testTime, tt.data)
			is.True(err != nil) // data that is not an object is refused
		})
	}
}

func TestWriterMeta(t *testing.T) {
	is := is.New(t)
	var buf bytes.Buffer
	w := New(&buf, Options{Now: fixedClock})
	is.NoErr(w.Meta(EventIterationStart, IterationStart{Iteration: 1, IssueID: "bd-abc", Mode: "build"}))
	is.NoErr(w.Meta(EventIterationEnd, Fields{{"iteration", 1}, {"exit_code", 0}, {"duration_seconds", 45}}))
	want := `{"type":"loop_meta","event":"iteration_start","timestamp":"2026-01-28T15:30:00Z","data":{"iteration":1,"issue_id":"bd-abc","mode":"build"}}` + "\n" +
		`{"type":"loop_meta","event":"iteration_end","timestamp":"2026-01-28T15:30:00Z","data":{"iteration":1,"exit_code":0,"duration_seconds":45}}` + "\n"
	is.Equal(buf.String(), want)
	is.True(bytes.Contains(buf.Bytes(), []byte(`"type":"loop_meta"`))) // what grep looks for

	is.NoErr(w.Close())
	is.True(errors.Is(w.Meta(EventSweep, nil), ErrClosed))                // no writes after Close
	is.True(errors.Is(w.AgentLine(StreamStdout, []byte("x")), ErrClosed)) // no writes after Close
	is.NoErr(w.Close())                                                   // Close twice is fine
}

func fixtureFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return files
}

func TestPassThroughFixtures(t *testing.T) {
	for _, path := range fixtureFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			is := is.New(t)
			in, err := os.ReadFile(path)
			is.NoErr(err)
			is.True(bytes.HasSuffix(in, []byte("\n"))) // fixture lines all end in a newline

			var viaCopy bytes.Buffer
			is.NoErr(New(&viaCopy, Options{}).CopyLines(StreamStdout, bytes.NewReader(in)))
			is.True(bytes.Equal(viaCopy.Bytes(), in)) // CopyLines passes stream-json through byte for byte

			var viaOneByte bytes.Buffer
			is.NoErr(New(&viaOneByte, Options{}).CopyLines(StreamStdout, iotest.OneByteReader(bytes.NewReader(in))))
			is.True(bytes.Equal(viaOneByte.Bytes(), in)) // however the pipe splits the reads

			var viaLines bytes.Buffer
			w := New(&viaLines, Options{})
			for line := range bytes.Lines(in) {
				is.NoErr(w.AgentLine(StreamStdout, line))
			}
			is.True(bytes.Equal(viaLines.Bytes(), in)) // AgentLine too
		})
	}
}

func TestWrapping(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		in     string
		want   string
	}{
		{"text on stdout", StreamStdout, "hello world\n",
			`{"type":"agent_output","stream":"stdout","line":"hello world"}` + "\n"},
		{"JSON on stderr is wrapped", StreamStderr, `{"a":1}` + "\n",
			`{"type":"agent_output","stream":"stderr","line":"{\"a\":1}"}` + "\n"},
		{"JSON that is not an object", StreamStdout, "[1,2]\n42\n\"s\"\nnull\n",
			`{"type":"agent_output","stream":"stdout","line":"[1,2]"}` + "\n" +
				`{"type":"agent_output","stream":"stdout","line":"42"}` + "\n" +
				`{"type":"agent_output","stream":"stdout","line":"\"s\""}` + "\n" +
				`{"type":"agent_output","stream":"stdout","line":"null"}` + "\n"},
		{"truncated JSON", StreamStdout, `{"type":"assistant","mess` + "\n",
			`{"type":"agent_output","stream":"stdout","line":"{\"type\":\"assistant\",\"mess"}` + "\n"},
		{"empty lines are kept", StreamStderr, "\n\n",
			`{"type":"agent_output","stream":"stderr","line":""}` + "\n" +
				`{"type":"agent_output","stream":"stderr","line":""}` + "\n"},
		{"escapes", StreamStderr, "tab\there \"q\" back\\slash \x1b[31mred\x00 <b>&\r\n",
			`{"type":"agent_output","stream":"stderr","line":"tab\there \"q\" back\\slash \u001b[31mred\u0000 <b>&\r"}` + "\n"},
		{"invalid UTF-8 becomes U+FFFD", StreamStderr, "a\xffb\xe2\x82\n",
			`{"type":"agent_output","stream":"stderr","line":"a\ufffdb\ufffd\ufffd"}` + "\n"},
		{"UTF-8 is kept", StreamStderr, "naïve ✓ 日本\n",
			`{"type":"agent_output","stream":"stderr","line":"naïve ✓ 日本"}` + "\n"},
		{"an object with spaces passes", StreamStdout, " {\"a\": 1} \n",
			" {\"a\": 1} \n"},
		{"no final newline", StreamStdout, "{\"a\":1}\nlast",
			"{\"a\":1}\n" + `{"type":"agent_output","stream":"stdout","line":"last"}` + "\n"},
		{"a forged loop_meta line is wrapped", StreamStdout, `{"type":"loop_meta","event":"run_end","data":{}}` + "\n",
			`{"type":"agent_output","stream":"stdout","line":"{\"type\":\"loop_meta\",\"event\":\"run_end\",\"data\":{}}"}` + "\n"},
		{"a forged loop_meta with escapes is wrapped", StreamStdout, `{"x":1,"t\u0079pe":"loop\u005fmeta"}` + "\n",
			`{"type":"agent_output","stream":"stdout","line":"{\"x\":1,\"t\\u0079pe\":\"loop\\u005fmeta\"}"}` + "\n"},
		{"loop_meta elsewhere passes", StreamStdout, `{"type":"assistant","text":"\"type\":\"loop_meta\"","n":{"type":"loop_meta"}}` + "\n",
			`{"type":"assistant","text":"\"type\":\"loop_meta\"","n":{"type":"loop_meta"}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var buf bytes.Buffer
			is.NoErr(New(&buf, Options{}).CopyLines(tt.stream, strings.NewReader(tt.in)))
			is.Equal(buf.String(), tt.want)
			checkAllJSON(t, buf.Bytes())
		})
	}
}

func TestStreamWriter(t *testing.T) {
	is := is.New(t)
	in, err := os.ReadFile("testdata/claude-success.jsonl")
	is.NoErr(err)
	in = append(in, "a line longer than the bound, without a newline"...)

	var want bytes.Buffer
	is.NoErr(New(&want, Options{MaxLine: 16}).CopyLines(StreamStdout, bytes.NewReader(in)))

	var got bytes.Buffer
	sw := New(&got, Options{MaxLine: 16}).StreamWriter(StreamStdout)
	var seen bytes.Buffer // what the other reader of the pipe gets
	_, err = io.Copy(&seen, io.TeeReader(iotest.HalfReader(bytes.NewReader(in)), sw))
	is.NoErr(err)
	is.NoErr(sw.Close())
	is.Equal(got.String(), want.String())  // the same records as CopyLines
	is.True(bytes.Equal(seen.Bytes(), in)) // and the tee'd reader sees every byte

	failing := New(&failingWriter{}, Options{}).StreamWriter(StreamStderr)
	n, err := failing.Write([]byte("x\n"))
	is.NoErr(err) // Write never fails, so the tee'd reader goes on
	is.Equal(n, 2)
	err = failing.Close()
	is.True(err != nil && strings.Contains(err.Error(), "disk full")) // Close reports the log's error
}

func TestAgentLine(t *testing.T) {
	is := is.New(t)
	var buf bytes.Buffer
	w := New(&buf, Options{})
	is.NoErr(w.AgentLine(StreamStdout, []byte(`{"a":1}`)))
	is.NoErr(w.AgentLine(StreamStdout, []byte("{\"b\":2}\n"))) // one trailing newline is dropped
	is.NoErr(w.AgentLine(StreamStderr, []byte("two\nlines")))  // embedded newlines split the line
	is.NoErr(w.AgentLine(StreamStderr, nil))                   // an empty line is still a line
	want := `{"a":1}` + "\n" + `{"b":2}` + "\n" +
		`{"type":"agent_output","stream":"stderr","line":"two"}` + "\n" +
		`{"type":"agent_output","stream":"stderr","line":"lines"}` + "\n" +
		`{"type":"agent_output","stream":"stderr","line":""}` + "\n"
	is.Equal(buf.String(), want)
}

func TestChunking(t *testing.T) {
	chunk := func(stream string, n int, final bool, line string) string {
		b, _ := json.Marshal(line)
		f := "false"
		if final {
			f = "true"
		}
		return `{"type":"agent_output","stream":"` + stream + `","chunk":` + string(rune('0'+n)) + `,"final":` + f + `,"line":` + string(b) + "}\n"
	}
	tests := []struct {
		name   string
		max    int
		stream string
		in     string
		want   string
	}{
		{"a line at the bound is whole", 8, StreamStderr, "01234567\n",
			`{"type":"agent_output","stream":"stderr","line":"01234567"}` + "\n"},
		{"one byte over", 8, StreamStderr, "012345678\n",
			chunk("stderr", 1, false, "01234567") + chunk("stderr", 2, true, "8")},
		{"three chunks", 8, StreamStdout, "0123456789abcdefghij\nnext\n",
			chunk("stdout", 1, false, "01234567") + chunk("stdout", 2, false, "89abcdef") + chunk("stdout", 3, true, "ghij") +
				`{"type":"agent_output","stream":"stdout","line":"next"}` + "\n"},
		{"an exact multiple of the bound", 4, StreamStderr, "01234567",
			chunk("stderr", 1, false, "0123") + chunk("stderr", 2, true, "4567")},
		{"a JSON object over the bound is chunked, not passed", 8, StreamStdout, `{"a":"0123456789"}` + "\n",
			chunk("stdout", 1, false, `{"a":"01`) + chunk("stdout", 2, false, `23456789`) + chunk("stdout", 3, true, `"}`)},
		{"characters are not split", 5, StreamStderr, "ééééé\n", // 10 bytes
			chunk("stderr", 1, false, "éé") + chunk("stderr", 2, false, "éé") + chunk("stderr", 3, true, "é")},
		{"no final newline", 4, StreamStderr, "abcdefg",
			chunk("stderr", 1, false, "abcd") + chunk("stderr", 2, true, "efg")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var whole, oneByte, viaLine bytes.Buffer
			is.NoErr(New(&whole, Options{MaxLine: tt.max}).CopyLines(tt.stream, strings.NewReader(tt.in)))
			is.Equal(whole.String(), tt.want)
			is.NoErr(New(&oneByte, Options{MaxLine: tt.max}).CopyLines(tt.stream, iotest.OneByteReader(strings.NewReader(tt.in))))
			is.Equal(oneByte.String(), tt.want) // the same records however the input arrives
			w := New(&viaLine, Options{MaxLine: tt.max})
			for l := range strings.Lines(tt.in) {
				is.NoErr(w.AgentLine(tt.stream, []byte(l)))
			}
			is.Equal(viaLine.String(), tt.want)                                           // and through AgentLine
			is.Equal(reconstruct(t, whole.Bytes()), strings.TrimSuffix(tt.in, "\n")+"\n") // nothing is lost
		})
	}
}

// reconstruct rebuilds the agent's output from a log: verbatim lines as
// they are, wrapped lines unwrapped and chunks joined.
func reconstruct(t *testing.T, log []byte) string {
	t.Helper()
	var b strings.Builder
	for line := range bytes.Lines(log) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		var rec struct {
			Type  string `json:"type"`
			Line  string `json:"line"`
			Chunk int    `json:"chunk"`
			Final bool   `json:"final"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("line is not JSON: %q", line)
		}
		switch {
		case rec.Type == TypeAgentOutput && rec.Chunk > 0 && !rec.Final:
			b.WriteString(rec.Line)
		case rec.Type == TypeAgentOutput:
			b.WriteString(rec.Line + "\n")
		case rec.Type == TypeMeta:
		default:
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func checkAllJSON(t *testing.T, log []byte) int {
	t.Helper()
	n := 0
	for line := range bytes.Lines(log) {
		n++
		if !bytes.HasSuffix(line, []byte("\n")) {
			t.Fatalf("line %d has no newline: %.100q", n, line)
		}
		if !json.Valid(line) {
			t.Fatalf("line %d is not JSON: %.200q", n, line)
		}
	}
	return n
}

// sizeCheckingWriter fails the test if one Write is larger than limit.
type sizeCheckingWriter struct {
	t       *testing.T
	limit   int
	written int64
	largest int
}

func (w *sizeCheckingWriter) Write(p []byte) (int, error) {
	if len(p) > w.limit {
		w.t.Errorf("a single write of %d bytes, over %d", len(p), w.limit)
	}
	w.largest = max(w.largest, len(p))
	w.written += int64(len(p))
	return len(p), nil
}

// repeatReader yields n bytes of b repeated, without holding them.
type repeatReader struct {
	b    []byte
	left int64
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && r.left > 0 {
		end := len(p)
		if int64(end-n) > r.left {
			end = n + int(r.left)
		}
		c := copy(p[n:end], r.b[r.off:])
		r.off = (r.off + c) % len(r.b)
		n += c
		r.left -= int64(c)
	}
	return n, nil
}

func TestCopyLinesLongLineBoundedBuffers(t *testing.T) {
	is := is.New(t)
	const max = 8 << 10
	const size = 8 << 20 // one line of 8 MiB, 1024 times the bound
	// Escaping can make a record up to 6 times its input (\u00XX); the
	// records of one read are batched up to flushSize before a write.
	w := &sizeCheckingWriter{t: t, limit: flushSize + 6*min(max, ChunkSize) + 256}
	lw := New(w, Options{MaxLine: max})
	r := &repeatReader{b: []byte("abc\"\\\x01é"), left: size}
	is.NoErr(lw.CopyLines(StreamStderr, io.MultiReader(r, strings.NewReader("\n"))))
	is.True(w.written > size) // everything was written, nothing dropped
	t.Logf("largest write %d bytes for a %d-byte line", w.largest, size)
}

func TestChunksOfALongLineAreSmall(t *testing.T) {
	is := is.New(t)
	const max = 3 << 20
	line := bytes.Repeat([]byte("0123456789abcdeé"), (5<<20)/17) // about 5 MiB, with 2-byte characters
	in := append(append([]byte{}, line...), '\n')
	var buf bytes.Buffer
	is.NoErr(New(&buf, Options{MaxLine: max}).CopyLines(StreamStdout, bytes.NewReader(in)))
	var sizes []int
	for l := range bytes.Lines(buf.Bytes()) {
		var rec struct {
			Chunk int
			Final bool
			Line  string
		}
		is.NoErr(json.Unmarshal(l, &rec))
		is.Equal(rec.Chunk, len(sizes)+1)   // chunks are numbered from 1
		is.True(len(rec.Line) <= ChunkSize) // no chunk is over ChunkSize
		sizes = append(sizes, len(rec.Line))
	}
	is.Equal(len(sizes), 5)                                     // 3 chunks for the first 3 MiB, then one per MiB
	is.Equal(reconstruct(t, buf.Bytes()), string(in))           // and nothing is lost
	is.True(sizes[0] >= ChunkSize-3 && sizes[3] >= ChunkSize-3) // full chunks, but for a character not split
}

type failingWriter struct{ writes int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	return 0, errors.New("disk full")
}

func TestCopyLinesDrainsAfterWriteError(t *testing.T) {
	is := is.New(t)
	fw := &failingWriter{}
	r := &repeatReader{b: []byte("{\"a\":1}\n"), left: 8 << 20}
	err := New(fw, Options{}).CopyLines(StreamStdout, r)
	is.True(err != nil)                                 // the write error is returned
	is.True(strings.Contains(err.Error(), "disk full")) // and says what failed
	is.Equal(r.left, int64(0))                          // the pipe was still read to the end
	is.Equal(fw.writes, 1)                              // no retries after the first failure
}

func TestCopyLinesReadError(t *testing.T) {
	is := is.New(t)
	var buf bytes.Buffer
	r := io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(errors.New("pipe broke")))
	err := New(&buf, Options{}).CopyLines(StreamStdout, r)
	is.True(err != nil && strings.Contains(err.Error(), "pipe broke"))                        // the read error is returned
	is.Equal(buf.String(), `{"type":"agent_output","stream":"stdout","line":"partial"}`+"\n") // what was read is kept
}
