package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/state"
)

// TestCrashLoop SIGKILLs ralphd 25 times at random moments of a 12-issue
// BUILD run whose agent leaves a background child, restarting it each
// time, and checks that nothing is lost or left running: every issue ends
// closed, attempts.txt and history.jsonl parse after every kill, no restart
// is refused, no attempt is counted twice for one iteration, and no agent
// process or child of one survives.
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop takes a while")
	}
	t.Parallel() // it mostly waits: let the scenarios run meanwhile
	bdDir := standinBin(t)
	work := t.TempDir()
	repo := filepath.Join(work, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	stateRoot := filepath.Join(work, "state")
	env := append(os.Environ(),
		"PATH="+bdDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+work, "XDG_STATE_HOME="+stateRoot, "XDG_CONFIG_HOME="+filepath.Join(work, "config"),
		"GIT_CONFIG_NOSYSTEM=1", "BEADS_ACTOR=Test User",
	)
	run := func(args ...string) string {
		t.Helper()
		name := args[0]
		if name == "bd" {
			name = filepath.Join(bdDir, "bd")
		}
		cmd := exec.Command(name, args[1:]...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("git", "init", "-q")
	run("bd", "init", "--prefix", "c", "--quiet", "--non-interactive")
	for i := 1; i <= 12; i++ {
		run("bd", "create", fmt.Sprintf("Issue %d", i), "--id", fmt.Sprintf("c-%02d", i), "-p", "2", "-q")
	}
	// The agent leaves a child running in the background, works a while,
	// then closes its issue.
	agentCmd := `sleep 300 & sleep 0.$(( 5 + $$ % 5 )); bd close "$RALPH_ISSUE_ID" --reason "go test ./... passes (exit 0)"`

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	start := func() (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command("ralphd", "build", "0", "--agent-cmd", agentCmd, "--stop-grace", "200ms")
		cmd.Dir, cmd.Env = repo, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	var projDir string
	for kill := 0; kill < 25; kill++ {
		cmd, out := start()
		time.Sleep(time.Duration(rng.IntN(1200)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if strings.Contains(out.String(), "another ralphd") {
			t.Fatalf("restart %d was refused:\n%s", kill, out)
		}
		if err == nil && strings.Contains(out.String(), "all work complete") {
			t.Logf("the run finished before kill %d", kill)
			break
		}
		if projDir == "" {
			if _, err := os.Stat(filepath.Join(stateRoot, "ralph", "projects")); errors.Is(err, fs.ErrNotExist) {
				continue // killed before it made its state (a loaded machine)
			}
			projDir = onlyDir(t, filepath.Join(stateRoot, "ralph", "projects"))
		}
		checkStateParses(t, projDir, kill)
	}
	// A last run to the end.
	cmd, out := start()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "all work complete or blocked") {
		t.Fatalf("final run did not finish the work:\n%s", out)
	}
	if projDir == "" {
		projDir = onlyDir(t, filepath.Join(stateRoot, "ralph", "projects"))
	}
	checkStateParses(t, projDir, 25)

	issues, err := beads.ParseIssues([]byte(run("bd", "list", "--all", "--json", "--limit", "0")))
	if err != nil {
		t.Fatal(err)
	}
	closed := 0
	for _, is := range issues {
		if is.Status == beads.StatusClosed {
			closed++
		} else {
			t.Errorf("%s is %s", is.ID, is.Status)
		}
	}
	if closed != 12 {
		t.Errorf("closed %d of 12", closed)
	}
	data, _ := os.ReadFile(filepath.Join(projDir, "attempts.txt"))
	if strings.TrimSpace(string(data)) != "" {
		t.Errorf("attempts left after every issue closed: %q", data) // a double count would survive here
	}

	// One history record per iteration, never two.
	recs, _, err := state.ReadHistory(filepath.Join(projDir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		run  string
		iter int
	}
	seen := map[key]bool{}
	for _, r := range recs {
		if !r.IsIteration() {
			continue
		}
		k := key{r.RunID, r.Iteration}
		if seen[k] {
			t.Errorf("iteration %d of run %s recorded twice", r.Iteration, r.RunID)
		}
		seen[k] = true
	}

	// No agent process, and no child of one, is alive.
	if left := agentProcesses(work); len(left) > 0 {
		t.Errorf("agent processes still alive: %v", left)
	}
}

func onlyDir(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil || len(es) != 1 {
		t.Fatalf("want one project dir in %s: %v %v", dir, es, err)
	}
	return filepath.Join(dir, es[0].Name())
}

// checkStateParses fails if attempts.txt or history.jsonl has a line that
// does not parse (a torn write).
func checkStateParses(t *testing.T, dir string, kill int) {
	t.Helper()
	if data, err := os.ReadFile(filepath.Join(dir, "attempts.txt")); err == nil {
		if _, bad := state.ParseAttempts(data); len(bad) > 0 {
			t.Fatalf("after kill %d attempts.txt has unparseable lines %q", kill, bad)
		}
	}
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if _, err := state.ParseHistoryLine(sc.Bytes()); err != nil {
			t.Fatalf("after kill %d history.jsonl line %d does not parse: %v", kill, n, err)
		}
	}
}

// agentProcesses lists live processes that carry an agent run marker in
// their environment and belong to one test: they inherited its HOME (other
// ralphd runs on the machine are none of its business).
func agentProcesses(home string) []string {
	var left []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, []byte(agent.RunMarkerEnv+"=")) || !bytes.Contains(append([]byte{0}, env...), []byte("\x00HOME="+home+"\x00")) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(d, "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue // a zombie holds no resources and runs nothing
		}
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		left = append(left, filepath.Base(d)+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return left
}
