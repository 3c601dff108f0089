package logjsonl

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// writeStream logs data as one stream of an agent, tagged with worker
// ("" for none), through the writer ralphd's iterations use.
func writeStream(t testing.TB, worker, stream string, data []byte, maxLine int) []byte {
	t.Helper()
	var buf bytes.Buffer
	sw := New(&buf, Options{MaxLine: maxLine}).WorkerStreamWriter(worker, stream)
	piece := 7 // in uneven pieces, as a pipe gives them
	if len(data) > 1<<10 {
		piece = 4093
	}
	for len(data) > 0 {
		n := min(len(data), piece)
		if _, err := sw.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkTagged checks the tagged log of a worker against the log of the
// same output without workers: line for line, the tag is the only change,
// SplitWorker takes it out to give back the exact bytes, every line is a
// JSON object whose "ralph_worker" is the worker (as jq reads it: the last
// duplicate wins), and none passes for one of ralphd's events.
func checkTagged(t testing.TB, tagged, plain []byte, worker string) {
	t.Helper()
	tl, pl := bytes.Split(tagged, []byte("\n")), bytes.Split(plain, []byte("\n"))
	if len(tl) != len(pl) {
		t.Fatalf("%d tagged lines, %d without workers:\n%s\n---\n%s", len(tl), len(pl), tagged, plain)
	}
	for i := range tl {
		if len(pl[i]) == 0 && len(tl[i]) == 0 {
			continue
		}
		w, back := SplitWorker(tl[i])
		if w != worker || !bytes.Equal(back, pl[i]) {
			t.Fatalf("line %d: SplitWorker(%q) = %q, %q; want %q, %q", i+1, tl[i], w, back, worker, pl[i])
		}
		if w, same := SplitWorker(pl[i]); w != "" || !bytes.Equal(same, pl[i]) {
			t.Fatalf("line %d without workers reads as %q's: %q", i+1, w, pl[i])
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(tl[i], &rec); err != nil {
			t.Fatalf("line %d is not a JSON object: %q", i+1, tl[i])
		}
		var got string
		if err := json.Unmarshal(rec[WorkerKey], &got); err != nil || got != worker {
			t.Fatalf("line %d: %s is %s, want %q: %q", i+1, WorkerKey, rec[WorkerKey], worker, tl[i])
		}
		if string(rec["type"]) == `"loop_meta"` {
			t.Fatalf("line %d passes for an event: %q", i+1, tl[i])
		}
	}
}

func TestWorkerTag(t *testing.T) {
	long := `{"type":"assistant","text":"` + strings.Repeat("é", 40) + `"}`
	for _, tc := range []struct {
		name   string
		stream string
		in     string
		want   string // the tagged log
	}{
		{"object", StreamStdout, `{"type":"assistant","n":1}` + "\n",
			`{"ralph_worker":"w2","type":"assistant","n":1}` + "\n"},
		{"empty object", StreamStdout, "{}\n", `{"ralph_worker":"w2"}` + "\n"},
		{"empty object with space", StreamStdout, "{ }\n", `{"ralph_worker":"w2" }` + "\n"},
		{"leading space kept", StreamStdout, "  { \"a\" : 1 }\n", `  {"ralph_worker":"w2", "a" : 1 }` + "\n"},
		{"not JSON", StreamStdout, "hello\n",
			`{"ralph_worker":"w2","type":"agent_output","stream":"stdout","line":"hello"}` + "\n"},
		{"array", StreamStdout, "[1,2]\n",
			`{"ralph_worker":"w2","type":"agent_output","stream":"stdout","line":"[1,2]"}` + "\n"},
		{"stderr", StreamStderr, `{"a":1}` + "\n",
			`{"ralph_worker":"w2","type":"agent_output","stream":"stderr","line":"{\"a\":1}"}` + "\n"},
		{"no final newline", StreamStdout, `{"a":1}`, `{"ralph_worker":"w2","a":1}` + "\n"},
		{"an agent's own tag is wrapped", StreamStdout, `{"ralph_worker":"w1","type":"result"}` + "\n",
			`{"ralph_worker":"w2","type":"agent_output","stream":"stdout","line":"{\"ralph_worker\":\"w1\",\"type\":\"result\"}"}` + "\n"},
		{"an escaped tag is wrapped", StreamStdout, `{"type":"result","ralph\u005fworker":"w1"}` + "\n",
			`{"ralph_worker":"w2","type":"agent_output","stream":"stdout","line":"{\"type\":\"result\",\"ralph\\u005fworker\":\"w1\"}"}` + "\n"},
		{"a claimed event is wrapped", StreamStdout, `{"type":"loop_meta","event":"run_end"}` + "\n",
			`{"ralph_worker":"w2","type":"agent_output","stream":"stdout","line":"{\"type\":\"loop_meta\",\"event\":\"run_end\"}"}` + "\n"},
		{"the tag elsewhere is the agent's", StreamStdout, `{"text":"ralph_worker"}` + "\n",
			`{"ralph_worker":"w2","text":"ralph_worker"}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tagged := writeStream(t, "w2", tc.stream, []byte(tc.in), DefaultMaxLine)
			if string(tagged) != tc.want {
				t.Errorf("tagged:\n got %s\nwant %s", tagged, tc.want)
			}
			checkTagged(t, tagged, writeStream(t, "", tc.stream, []byte(tc.in), DefaultMaxLine), "w2")
		})
	}
	t.Run("over-long line: every chunk tagged", func(t *testing.T) {
		in := []byte(long + "\n" + long + "\n")
		tagged := writeStream(t, "w3", StreamStdout, in, 16)
		if n := bytes.Count(tagged, []byte(`{"ralph_worker":"w3","type":"agent_output","stream":"stdout","chunk":`)); n < 4 {
			t.Errorf("%d tagged chunks:\n%s", n, tagged)
		}
		checkTagged(t, tagged, writeStream(t, "", StreamStdout, in, 16), "w3")
	})
	t.Run("a name that needs escaping", func(t *testing.T) {
		in := []byte(`{"a":1}` + "\n" + "text\n")
		tagged := writeStream(t, `w"1\`, StreamStdout, in, DefaultMaxLine)
		checkTagged(t, tagged, writeStream(t, "", StreamStdout, in, DefaultMaxLine), `w"1\`)
	})
}

func TestSplitWorker(t *testing.T) {
	for _, tc := range []struct {
		in, worker, rest string
	}{
		{`{"ralph_worker":"w1","a":1}`, "w1", `{"a":1}`},
		{`{"ralph_worker":"w1"}`, "w1", `{}`},
		{` {"ralph_worker":"w12" }`, "w12", ` { }`},
		{`{"ralph_worker":"w\u0031","a":1}`, "w1", `{"a":1}`},
		{`{"a":1,"ralph_worker":"w1"}`, "", `{"a":1,"ralph_worker":"w1"}`}, // not where ralphd puts it
		{`{ "ralph_worker":"w1","a":1}`, "", `{ "ralph_worker":"w1","a":1}`},
		{`{"ralph_worker":1,"a":1}`, "", `{"ralph_worker":1,"a":1}`},
		{`{"ralph_worker":"","a":1}`, "", `{"ralph_worker":"","a":1}`},
		{`{"ralph_worker":"w1`, "", `{"ralph_worker":"w1`},
		{`{"ralph_worker":`, "", `{"ralph_worker":`},
		{`{"type":"loop_meta","data":{"worker":"w1"}}`, "", `{"type":"loop_meta","data":{"worker":"w1"}}`},
		{``, "", ``},
		{`not json`, "", `not json`},
	} {
		w, rest := SplitWorker([]byte(tc.in))
		if w != tc.worker || string(rest) != tc.rest {
			t.Errorf("SplitWorker(%s) = %q, %s; want %q, %s", tc.in, w, rest, tc.worker, tc.rest)
		}
	}
}

// FuzzWorkerTag: whatever a worker's agent prints, on either stream and
// with any line bound, its lines in the log are the lines a run without
// workers logs, each with the worker's tag as the only change.
func FuzzWorkerTag(f *testing.F) {
	addFixtureSeeds(f, func(b []byte) { f.Add(b, uint16(4096), false, "w1") })
	f.Add([]byte("{}\n{ }\n  {\"a\":1}\n[]\nx\n"), uint16(100), false, "w2")
	f.Add([]byte(`{"ralph_worker":"w9","type":"assistant"}`+"\n"+`{"ralph\u005fworker":1}`), uint16(8), false, "w2")
	f.Add([]byte("ééé\xff\x00\n\n{}\n[1]"), uint16(3), true, `w"\`)
	f.Fuzz(func(t *testing.T, data []byte, bound uint16, stderr bool, worker string) {
		if worker == "" {
			worker = "w1"
		}
		stream := StreamStdout
		if stderr {
			stream = StreamStderr
		}
		maxLine := int(bound)%200 + 4
		tagged := writeStream(t, worker, stream, data, maxLine)
		plain := writeStream(t, "", stream, data, maxLine)
		checkTagged(t, tagged, plain, strings.ToValidUTF8(worker, "\uFFFD"))
	})
}
