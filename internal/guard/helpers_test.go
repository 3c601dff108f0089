package guard

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read testdata: %v", err)
	}
	return b
}

// streamCommands returns the shell commands agents ran in the recorded
// agent streams (testdata/streams): Claude and Amp Bash tool_use inputs and
// Codex command_execution items.
func streamCommands(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "streams", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			gjson.Get(line, "message.content").ForEach(func(_, block gjson.Result) bool {
				if block.Get("type").String() == "tool_use" {
					for _, key := range []string{"input.command", "input.cmd"} {
						if c := block.Get(key); c.Type == gjson.String {
							out = append(out, c.String())
						}
					}
				}
				return true
			})
			if c := gjson.Get(line, "item.command"); c.Type == gjson.String {
				out = append(out, c.String())
			}
		}
	}
	return out
}

// bdCommandLines returns the argv (after "bd") of every bd command line
// recorded in the beads contract (testdata/bd-commands.txt), split with the
// shell extractor.
func bdCommandLines(t testing.TB) [][]string {
	t.Helper()
	var out [][]string
	for _, line := range strings.Split(string(readTestdata(t, "bd-commands.txt")), "\n") {
		line = strings.ReplaceAll(line, "<REPO>", "/repo")
		if strings.TrimSpace(line) == "" {
			continue
		}
		calls, err := ExtractBDCalls(line)
		if err != nil {
			t.Fatalf("extract %q: %v", line, err)
		}
		for _, c := range calls {
			out = append(out, c[1:])
		}
	}
	return out
}

// Command returns the command path as one string, e.g. "dep remove".
func (c Call) Command() string { return strings.Join(c.Path, " ") }

// Rules returns every rule of the policy, in a stable order.
func Rules() []Rule {
	return append([]Rule(nil), rules...)
}
