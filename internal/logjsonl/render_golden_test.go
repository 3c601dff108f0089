package logjsonl

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestRenderAgentStreams")

// TestRenderAgentStreams renders every recorded agent stream the agent
// package parses, on its own and after a run_start that names its agent,
// plainly and verbosely, and compares the text with a golden file: what
// `ralphd logs` shows of each CLI must not change by accident.
func TestRenderAgentStreams(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "agent", "testdata", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob(filepath.Join("..", "agent", "testdata", "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("only %d agent streams found", len(files))
	}
	for _, f := range files {
		rel, err := filepath.Rel(filepath.Join("..", "agent", "testdata"), f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.ReplaceAll(strings.TrimSuffix(rel, ".jsonl"), string(filepath.Separator), "_")
		t.Run(name, func(t *testing.T) {
			stream, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := renderVariants(t, streamAgent(rel), stream)
			golden := filepath.Join("testdata", "render", name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rendered %s differs from %s:\n%s", f, golden, firstDiff(string(got), string(want)))
			}
		})
	}
}

// streamAgent names the backend of a recorded stream from its file name:
// "codex-success.jsonl", "real-gemini-0.61.0-...", "claude-2.1.197/...".
func streamAgent(rel string) string {
	name := strings.TrimPrefix(filepath.ToSlash(rel), "real-")
	agent, _, _ := strings.Cut(name, "-")
	return agent
}

// renderVariants renders stream as a bare stream and as the agent output
// of a run of agent (and, for Claude's stream-json, of the command
// backend, which reads it too), plainly, verbosely and in colour.
func renderVariants(t *testing.T, agent string, stream []byte) []byte {
	var out bytes.Buffer
	agents := []string{"", agent}
	if agent == "claude" {
		agents = append(agents, "command")
	}
	for _, a := range agents {
		in := stream
		if a != "" {
			in = append([]byte(`{"type":"loop_meta","event":"run_start","timestamp":"2026-01-28T15:30:00Z","data":{"schema_version":1,"mode":"build","agent":"`+a+`"}}`+"\n"), stream...)
		}
		for _, opts := range []RenderOptions{{}, {Verbose: true}, {Verbose: true, Color: true}} {
			label := a
			if label == "" {
				label = "bare stream"
			}
			if opts.Verbose {
				label += ", verbose"
			}
			if opts.Color {
				label += ", colour"
			}
			out.WriteString("=== " + label + " ===\n")
			out.WriteString(renderString(t, in, opts))
		}
	}
	return out.Bytes()
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %q\nwant: %q", i+1, gl, wl)
		}
	}
	return "(no line differs)"
}

// TestRenderDeepLine checks that a line nested deeper than any parser
// should recurse is shown raw, whichever backend reads the run: a log is
// not trusted input.
func TestRenderDeepLine(t *testing.T) {
	deep := `{"type":"assistant","message":` + strings.Repeat("[", 8<<20-100)
	for _, agent := range []string{"", "claude", "codex", "opencode", "gemini"} {
		in := deep + "\n"
		if agent != "" {
			in = `{"type":"loop_meta","event":"run_start","timestamp":"2026-01-28T15:30:00Z","data":{"agent":"` + agent + `"}}` + "\n" + in
		}
		out := renderString(t, []byte(in), RenderOptions{MaxText: 40})
		hasLines(t, out, `  {"type":"assistant","message":[[[[[[[[[[… (8388538 bytes)`) // not a crash
	}
}
