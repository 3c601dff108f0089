package logjsonl

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func addFixtureSeeds(f *testing.F, add func(b []byte)) {
	f.Helper()
	for _, path := range fixtureFiles(f) {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
}

// FuzzAgentOutput checks the line classifier and the chunker: every record
// is one line of JSON, agent output cannot pass for ralphd's events, and
// the agent's bytes can be rebuilt from the log.
func FuzzAgentOutput(f *testing.F) {
	addFixtureSeeds(f, func(b []byte) { f.Add(b, uint16(4096), false) })
	f.Add([]byte(`{"type":"loop_meta","event":"run_end"}`+"\n"), uint16(100), false)
	f.Add([]byte(`{"t\u0079pe":"loop_meta","type":"x"}`+"\n"), uint16(100), false)
	f.Add([]byte("ééé\xff\x00\n\n{}\n[1]"), uint16(3), true)
	f.Fuzz(func(t *testing.T, data []byte, bound uint16, stderr bool) {
		stream := StreamStdout
		if stderr {
			stream = StreamStderr
		}
		maxLine := int(bound)%200 + 4
		var viaCopy, viaLine bytes.Buffer
		if err := New(&viaCopy, Options{MaxLine: maxLine}).CopyLines(stream, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		w := New(&viaLine, Options{MaxLine: maxLine})
		for line := range bytes.Lines(data) {
			if err := w.AgentLine(stream, line); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(viaCopy.Bytes(), viaLine.Bytes()) {
			t.Fatalf("CopyLines and AgentLine differ:\n%q\n%q", viaCopy.Bytes(), viaLine.Bytes())
		}
		out := viaCopy.Bytes()
		for line := range bytes.Lines(out) {
			if !bytes.HasSuffix(line, []byte("\n")) || !json.Valid(line) {
				t.Fatalf("not a JSON line: %q", line)
			}
			var rec map[string]json.RawMessage // like jq: exact keys, the last duplicate wins
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatalf("not an object: %q", line)
			}
			if string(rec["type"]) == `"loop_meta"` {
				t.Fatalf("agent output passes for an event: %q", line)
			}
		}
		if utf8.Valid(data) {
			want := string(data)
			if want != "" && !strings.HasSuffix(want, "\n") {
				want += "\n"
			}
			if got := reconstruct(t, out); got != want {
				t.Fatalf("lost bytes:\n got %q\nwant %q", got, want)
			}
		}
	})
}

// FuzzRender checks that any input renders without panicking or failing
// and that nothing reaches the terminal that could drive it.
func FuzzRender(f *testing.F) {
	addFixtureSeeds(f, func(b []byte) { f.Add(b, false) })
	log, err := os.ReadFile(writeSampleRun(f, f.TempDir()))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(log, true)
	f.Add([]byte(`{"type":"loop_meta","event":"iteration_end","data":{"duration_seconds":1e300,"cost_usd":"x","iteration":[]}}`), true)
	f.Add([]byte(`{"type":"assistant","message":{"content":"\u001b]0;title\u0007"}}`), false)
	f.Add([]byte(`{"ralph_worker":"w\u001b[2J","type":"assistant","message":{"content":"x"}}`+"\n"+`{"ralph_worker":"w1"}`), false)
	f.Fuzz(func(t *testing.T, data []byte, verbose bool) {
		var out bytes.Buffer
		if err := Render(&out, bytes.NewReader(data), RenderOptions{Verbose: verbose, MaxText: 64}); err != nil {
			t.Fatal(err)
		}
		for _, r := range out.String() {
			if unicode.IsControl(r) && r != '\n' && r != '\t' {
				t.Fatalf("control character %U in output:\n%q", r, out.String())
			}
		}
		if err := Render(&out, bytes.NewReader(data), RenderOptions{Verbose: verbose, Color: true}); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzSummarize checks that any log content can be summarised.
func FuzzSummarize(f *testing.F) {
	addFixtureSeeds(f, func(b []byte) { f.Add(b) })
	log, err := os.ReadFile(writeSampleRun(f, f.TempDir()))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(log)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := RunSummary{Outcome: OutcomeUnfinished}
		if err := s.read(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if s.Size != int64(len(data)) {
			t.Fatalf("size %d, want %d", s.Size, len(data))
		}
	})
}

// FuzzParseLogName checks the reading of a run log's file name (any name
// a logs directory holds): a name it takes is a .log whose time is a run
// ID's or the legacy layout's, and whose -N suffix is not negative.
func FuzzParseLogName(f *testing.F) {
	for _, s := range []string{"20261124-013000.log", "20261124-013000-2.log", "2026-11-24-01-30-00.log", "2026-11-24-01-30-00-3.log",
		"2026-11-24-01-30-00--3.log", "x.log", ".log", "20261124-013000", "2026-11-24-01-30-00-99999999999999999999.log"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		ts, suffix, ok := parseLogName(name)
		if !ok {
			if !ts.IsZero() || suffix != 0 {
				t.Fatalf("%q: not a log name, but %v, %d", name, ts, suffix)
			}
			return
		}
		if !strings.HasSuffix(name, ".log") || ts.IsZero() || suffix < 0 {
			t.Fatalf("%q: read as %v, suffix %d", name, ts, suffix)
		}
	})
}
