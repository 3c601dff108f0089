package beads_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The fake bd is a shell script, so that a call costs a few milliseconds
// even on a loaded machine. It replays recorded fixtures: call n prints
// fixture n's stdout and stderr and exits with its code; the last fixture
// repeats. Each call records its argv (NUL-separated), its working
// directory and the bd environment variables it saw.
const replayScript = `#!/bin/sh
d=%s
n=0
for f in "$d"/calls/*.args; do
	[ -e "$f" ] && n=$((n + 1))
done
call="$d/calls/$(printf %%06d "$n").$$"
{
	pwd
	[ -n "${BD_JSON_ENVELOPE+x}" ] && echo "BD_JSON_ENVELOPE=$BD_JSON_ENVELOPE"
	[ -n "${BEADS_DIR+x}" ] && echo "BEADS_DIR=$BEADS_DIR"
} > "$call.env"
printf '%%s\0' "$@" > "$call.tmp"
mv "$call.tmp" "$call.args"
i=$n
[ -d "$d/fx/$i" ] || i=$(cat "$d/fx/last")
cat "$d/fx/$i/stdout"
cat "$d/fx/$i/stderr" >&2
exit "$(cat "$d/fx/$i/code")"
`

// sleepScript starts a grandchild of the client, which holds bd's stdout
// and stderr open, writes its pid to a file, and waits.
const sleepScript = `#!/bin/sh
sleep 600 &
echo $! > %[1]s.tmp
mv %[1]s.tmp %[1]s
wait
`

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeScript writes an executable script to dir/bd.
func writeScript(t *testing.T, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "bd")
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// replayBD writes a fake bd into a new directory that replays the named
// fixtures, and returns its path and its state directory.
func replayBD(t *testing.T, fixtures ...string) (bin, state string) {
	t.Helper()
	fxs := make([]fixture, len(fixtures))
	for i, name := range fixtures {
		fxs[i] = loadFixture(t, name)
	}
	return replayOutputs(t, fxs...)
}

// replayOutputs is replayBD for fixtures built in the test.
func replayOutputs(t *testing.T, fixtures ...fixture) (bin, state string) {
	t.Helper()
	state = t.TempDir()
	for i, fx := range fixtures {
		dir := filepath.Join(state, "fx", strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, data := range map[string][]byte{
			"stdout": fx.Stdout,
			"stderr": fx.Stderr,
			"code":   []byte(strconv.Itoa(fx.ExitCode)),
		} {
			if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	last := []byte(strconv.Itoa(len(fixtures) - 1))
	if err := os.WriteFile(filepath.Join(state, "fx", "last"), last, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(state, "calls"), 0o755); err != nil {
		t.Fatal(err)
	}
	return writeScript(t, state, fmt.Sprintf(replayScript, shellQuote(state))), state
}

// fakeCall is one recorded call of the replaying fake.
type fakeCall struct {
	Args []string
	Dir  string
	Env  map[string]string
}

// readCalls returns the calls the replaying fake recorded, in order.
func readCalls(t *testing.T, state string) []fakeCall {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(state, "calls", "*.args"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	var out []fakeCall
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := fakeCall{Args: []string{}, Env: map[string]string{}}
		for _, a := range bytes.Split(raw, []byte{0}) {
			c.Args = append(c.Args, string(a))
		}
		c.Args = c.Args[:len(c.Args)-1] // after the final NUL
		env, err := os.ReadFile(strings.TrimSuffix(p, ".args") + ".env")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(env)), "\n")
		c.Dir = lines[0]
		for _, l := range lines[1:] {
			k, v, _ := strings.Cut(l, "=")
			c.Env[k] = v
		}
		out = append(out, c)
	}
	return out
}
