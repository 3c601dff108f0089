package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// fixture is one recorded bd run from testdata/contract.
type fixture struct {
	Name    string
	CWD     string
	Command string
	Exit    int
	Stdout  string
	Stderr  string
}

var sectionRe = regexp.MustCompile(`^=== (.+) ===$`)

// parseFixture reads the contract's section format.
func parseFixture(text string) (fixture, error) {
	sections := map[string]string{}
	cur := ""
	var buf strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if m := sectionRe.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
			if cur != "" {
				sections[cur] = buf.String()
			}
			cur = m[1]
			buf.Reset()
			continue
		}
		buf.WriteString(line)
	}
	one := func(k string) string { return strings.TrimSpace(sections[k]) }
	f := fixture{Name: one("CASE"), CWD: one("CWD"), Command: one("COMMAND"), Stdout: sections["STDOUT"], Stderr: sections["STDERR"]}
	if f.CWD == "" {
		f.CWD = "<REPO>"
	}
	if s := one("EXIT CODE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return f, fmt.Errorf("exit code %q: %w", s, err)
		}
		f.Exit = n
	}
	if f.Command == "" {
		return f, errors.New("fixture has no COMMAND section")
	}
	return f, nil
}

// loadFixtures reads every fixture, keyed by file name without ".txt"
// ("help/help-ready" for help files).
func loadFixtures(t *testing.T) map[string]fixture {
	t.Helper()
	out := map[string]fixture{}
	for _, pattern := range []string{"testdata/contract/*.txt", "testdata/contract/help/*.txt"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatalf("glob %s: %v", pattern, err)
		}
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("read %s: %v", p, err)
			}
			name := strings.TrimSuffix(strings.TrimPrefix(p, "testdata/contract/"), ".txt")
			if summaries[name] {
				out[name] = fixture{Name: name}
				continue
			}
			f, err := parseFixture(string(b))
			if err != nil {
				t.Fatalf("parse %s: %v", p, err)
			}
			out[name] = f
		}
	}
	return out
}

// summaries are hand-written records of parallel runs, not one command.
var summaries = map[string]bool{
	"concurrency-claim-race": true,
	"claim-race-worktrees":   true,
	"claim-race-server":      true,
	"server-setup-summary":   true,
}

// jnode is a JSON value that keeps object key order.
type jnode struct {
	kind byte // o a s n b z
	keys []string
	vals []*jnode
	s    string
}

func parseOrdered(s string) (*jnode, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	n, err := readNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return n, nil
}

func readNode(dec *json.Decoder) (*jnode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &jnode{kind: 'a'}
		if v == '{' {
			n.kind = 'o'
		}
		for dec.More() {
			if n.kind == 'o' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				ks, ok := k.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", k)
				}
				n.keys = append(n.keys, ks)
			}
			child, err := readNode(dec)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, child)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return n, nil
	case string:
		return &jnode{kind: 's', s: v}, nil
	case json.Number:
		return &jnode{kind: 'n', s: v.String()}, nil
	case bool:
		return &jnode{kind: 'b', s: strconv.FormatBool(v)}, nil
	case nil:
		return &jnode{kind: 'z'}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

var (
	timestampRe = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`)
	digitsRe    = regexp.MustCompile(`\d+`)
	uuidRe      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// compareJSON lists the differences between want and got. With values
// off it compares keys, key order, types and nesting only; with values on
// it also compares values, except timestamps and UUIDs, which must only
// have the same form (for timestamps: whole seconds or fractional).
func compareJSON(path string, want, got *jnode, values bool) []string {
	if want.kind != got.kind {
		return []string{fmt.Sprintf("%s: type %c, want %c", path, got.kind, want.kind)}
	}
	var diffs []string
	switch want.kind {
	case 'o':
		if strings.Join(want.keys, ",") != strings.Join(got.keys, ",") {
			return []string{fmt.Sprintf("%s: keys\n  got  %v\n  want %v", path, got.keys, want.keys)}
		}
		for i, k := range want.keys {
			diffs = append(diffs, compareJSON(path+"."+k, want.vals[i], got.vals[i], values)...)
		}
	case 'a':
		if len(want.vals) != len(got.vals) {
			return []string{fmt.Sprintf("%s: %d elements, want %d", path, len(got.vals), len(want.vals))}
		}
		for i := range want.vals {
			diffs = append(diffs, compareJSON(fmt.Sprintf("%s[%d]", path, i), want.vals[i], got.vals[i], values)...)
		}
	case 's':
		switch {
		case timestampRe.MatchString(want.s):
			wf, gf := strings.Contains(want.s, "."), strings.Contains(got.s, ".")
			if !timestampRe.MatchString(got.s) || wf != gf {
				diffs = append(diffs, fmt.Sprintf("%s: timestamp %q has another form than %q", path, got.s, want.s))
			}
		case uuidRe.MatchString(want.s):
			if !uuidRe.MatchString(got.s) {
				diffs = append(diffs, fmt.Sprintf("%s: %q is not a UUID like %q", path, got.s, want.s))
			}
		case values && want.s != got.s:
			diffs = append(diffs, fmt.Sprintf("%s: %q, want %q", path, got.s, want.s))
		}
	default:
		if values && want.s != got.s {
			diffs = append(diffs, fmt.Sprintf("%s: %s, want %s", path, got.s, want.s))
		}
	}
	return diffs
}

// compareOutput compares one recorded stream with the stand-in's.
// JSON (and JSONL) is compared structurally; text literally, or with
// digits masked when values are off.
func compareOutput(stream, want, got string, values bool) error {
	if want == got {
		return nil
	}
	trimmed := strings.TrimSpace(want)
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		wantDocs, werr := jsonDocs(want)
		gotDocs, gerr := jsonDocs(got)
		if werr == nil {
			if gerr != nil {
				return fmt.Errorf("%s: not JSON like the recording: %v\n--- got ---\n%s", stream, gerr, got)
			}
			if len(wantDocs) != len(gotDocs) {
				return fmt.Errorf("%s: %d JSON documents, want %d\n--- got ---\n%s", stream, len(gotDocs), len(wantDocs), got)
			}
			var diffs []string
			for i := range wantDocs {
				diffs = append(diffs, compareJSON(fmt.Sprintf("%s#%d", stream, i), wantDocs[i], gotDocs[i], values)...)
			}
			if len(diffs) > 0 {
				return fmt.Errorf("%s differs from the recording:\n%s\n--- got ---\n%s", stream, strings.Join(diffs, "\n"), got)
			}
			if values && blankLines(want) != blankLines(got) {
				return fmt.Errorf("%s: trailing layout differs: got %q, want %q", stream, tail(got), tail(want))
			}
			return nil
		}
	}
	if !values {
		if digitsRe.ReplaceAllString(want, "N") == digitsRe.ReplaceAllString(got, "N") {
			return nil
		}
	}
	return fmt.Errorf("%s differs from the recording\n--- got ---\n%s--- want ---\n%s", stream, got, want)
}

func blankLines(s string) int { return len(s) - len(strings.TrimRight(s, "\n")) }

func tail(s string) string {
	if len(s) > 20 {
		return s[len(s)-20:]
	}
	return s
}

// jsonDocs parses one JSON document, or JSONL.
func jsonDocs(s string) ([]*jnode, error) {
	if n, err := parseOrdered(s); err == nil {
		return []*jnode{n}, nil
	}
	var out []*jnode
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		n, err := parseOrdered(line)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// scratch is a recording-like sandbox: <SCRATCH> holds <REPO> (a git
// repo), plain/ (not a repo), quietrepo/ (a repo) and home/.
type scratch struct {
	t       testing.TB
	root    string
	repo    string
	home    string
	runner  Runner
	clock   time.Time
	baseEnv []string
}

func newScratch(t testing.TB) *scratch {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatalf("resolve temp dir: %v", err)
	}
	s := &scratch{t: t, root: root, repo: filepath.Join(root, "repo"), home: filepath.Join(root, "home")}
	for _, d := range []string{s.repo, s.home, filepath.Join(root, "plain"), filepath.Join(root, "quietrepo")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("mkdir: %v", err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.home, ".gitconfig"), []byte("[user]\n\tname = Test User\n\temail = test@example.com\n"), 0o644); err != nil {
		t.Fatalf("write gitconfig: %v", err)
	}
	s.baseEnv = []string{
		"HOME=" + s.home,
		"PATH=" + os.Getenv("PATH"),
		"USER=tester",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(s.home, ".gitconfig"),
	}
	for _, d := range []string{s.repo, filepath.Join(root, "quietrepo")} {
		s.git(d, "init", "-q")
	}
	s.runner = Runner{Now: func() time.Time { return s.clock }}
	return s
}

func (s *scratch) git(dir string, args ...string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = s.baseEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// expandPlaceholders turns recording placeholders into sandbox paths.
func (s *scratch) expandPlaceholders(text string) string {
	return strings.NewReplacer("<REPO>", s.repo, "<SCRATCH>", s.root, "<HOME>", s.home, "<PORT>", testPort).Replace(text)
}

// normalize turns sandbox paths back into recording placeholders.
func (s *scratch) normalize(text string) string {
	return strings.NewReplacer(s.repo, "<REPO>", s.home, "<HOME>", s.root, "<SCRATCH>", "/tmp/test-beads", "<TMP>",
		":"+testPort, ":<PORT>").Replace(text)
}

// testPort stands for the recordings' <PORT>, the Dolt sql-server's port.
const testPort = "45917"

// result is what a command line printed.
type result struct {
	stdout, stderr string
	code           int
}

// run executes a recorded shell command line (bd calls, mkdir -p, cd,
// "| head -N", "&&", VAR=value prefixes) against the stand-in.
func (s *scratch) run(cwd, line string) result {
	s.t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(s.expandPlaceholders(line)), "")
	if err != nil || len(f.Stmts) != 1 {
		s.t.Fatalf("parse command %q: %v", line, err)
	}
	dir := s.expandPlaceholders(cwd)
	return s.exec(f.Stmts[0].Cmd, &dir, "")
}

func (s *scratch) exec(c syntax.Command, dir *string, stdin string) result {
	s.t.Helper()
	switch c := c.(type) {
	case *syntax.BinaryCmd:
		left := s.exec(c.X.Cmd, dir, stdin)
		switch c.Op {
		case syntax.AndStmt:
			if left.code != 0 {
				return left
			}
			right := s.exec(c.Y.Cmd, dir, stdin)
			return result{left.stdout + right.stdout, left.stderr + right.stderr, right.code}
		case syntax.Pipe:
			right := s.exec(c.Y.Cmd, dir, left.stdout)
			return result{right.stdout, left.stderr + right.stderr, right.code}
		}
	case *syntax.CallExpr:
		cfg := &expand.Config{}
		env := append([]string{}, s.baseEnv...)
		for _, a := range c.Assigns {
			v, err := expand.Literal(cfg, a.Value)
			if err != nil {
				s.t.Fatalf("expand %s: %v", a.Name.Value, err)
			}
			env = append(env, a.Name.Value+"="+v)
		}
		args, err := expand.Fields(cfg, c.Args...)
		if err != nil || len(args) == 0 {
			s.t.Fatalf("expand args: %v", err)
		}
		switch args[0] {
		case "bd":
			var out, errb bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			code := s.runner.Main(ctx, args[1:], strings.NewReader(stdin), &out, &errb, env, *dir)
			return result{s.normalize(out.String()), s.normalize(errb.String()), code}
		case "mkdir":
			for _, a := range args[1:] {
				if a != "-p" {
					if err := os.MkdirAll(filepath.Join(*dir, a), 0o755); err != nil {
						s.t.Fatalf("mkdir %s: %v", a, err)
					}
				}
			}
			return result{}
		case "timeout":
			// "timeout N cmd...": run cmd (the stand-in fails fast anyway).
			c.Args = c.Args[2:]
			return s.exec(c, dir, stdin)
		case "chmod":
			mode, err := strconv.ParseUint(args[1], 8, 32)
			if err != nil {
				s.t.Fatalf("chmod %v: %v", args, err)
			}
			if err := os.Chmod(filepath.Join(*dir, args[2]), os.FileMode(mode)); err != nil {
				s.t.Fatalf("chmod %v: %v", args, err)
			}
			return result{}
		case "git":
			s.git(*dir, args[1:]...)
			return result{}
		case "cd":
			*dir = filepath.Join(*dir, args[1])
			return result{}
		case "head":
			n, err := strconv.Atoi(strings.TrimPrefix(args[1], "-"))
			if err != nil {
				s.t.Fatalf("head %v: %v", args, err)
			}
			lines := strings.SplitAfter(stdin, "\n")
			if len(lines) > n {
				lines = lines[:n]
			}
			return result{stdout: strings.Join(lines, "")}
		}
		s.t.Fatalf("the replay shell does not know %q", args[0])
	}
	s.t.Fatalf("the replay shell does not know %T", c)
	return result{}
}

// latestTimestamp returns the latest created/updated/started/closed time
// in a recorded JSON output (not defer_until or due_at, which lie in the
// future), to pin the stand-in's clock to the recording's.
func latestTimestamp(out string) (time.Time, bool) {
	docs, err := jsonDocs(out)
	if err != nil {
		return time.Time{}, false
	}
	var best time.Time
	var walk func(key string, n *jnode)
	walk = func(key string, n *jnode) {
		switch n.kind {
		case 'o':
			for i, k := range n.keys {
				walk(k, n.vals[i])
			}
		case 'a':
			for _, v := range n.vals {
				walk(key, v)
			}
		case 's':
			if key == "created_at" || key == "updated_at" || key == "started_at" || key == "closed_at" {
				if t, err := time.Parse(time.RFC3339Nano, n.s); err == nil && t.After(best) {
					best = t
				}
			}
		}
	}
	for _, d := range docs {
		walk("", d)
	}
	return best, !best.IsZero()
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
