package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
)

// doltInstall is how to get the Dolt docs/workers.md's many-machines set-up was
// checked with (Dolt 1.88.1, as in the bd recordings).
const doltInstall = "go install github.com/dolthub/dolt/go/cmd/dolt@v0.40.5-0.20260507221239-14b38e279fc6"

// TestReadmeDoltServer runs the tracker host's lines of docs/workers.md's
// "Many machines" set-up as written, with a scratch data dir, port and HOME,
// against a real Dolt sql-server. Then it logs in as bd does, as root with
// the page's password, from this machine's network address (so Dolt sees
// another host, not localhost), and creates the project's database as
// `bd init --server` does. It needs dolt on PATH and skips without it.
func TestReadmeDoltServer(t *testing.T) {
	// scripts/test installs the same pin, for CI.
	if b, err := os.ReadFile("../../scripts/test"); err != nil || !strings.Contains(string(b), "dolt_version="+strings.TrimPrefix(doltInstall, "go install github.com/dolthub/dolt/go/cmd/dolt@")+"\n") {
		t.Errorf("scripts/test does not install the Dolt this test names (%s): keep the two pins the same", doltInstall)
	}
	if testing.Short() {
		t.Skip("starts a Dolt sql-server")
	}
	if _, err := exec.LookPath("dolt"); err != nil {
		t.Skip("dolt is not on PATH; to run this test: " + doltInstall)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	addr := networkAddr()
	if addr == "" {
		t.Skip("no non-loopback IPv4 address: cannot log in as another machine would")
	}
	data, err := os.ReadFile("../../docs/workers.md")
	if err != nil {
		t.Fatal(err)
	}
	tracker, password, err := trackerLines(string(data))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	port := freePort(t)
	srv := filepath.Join(dir, "srv", "beads")
	// The page's placeholders, each of which must be there: running its
	// lines with the real /srv/beads or port 3307 would be wrong here.
	for _, ph := range []struct{ old, new string }{
		{"/srv/beads", srv},
		{"3307", strconv.Itoa(port)},
		{"tracker.lan", addr},
	} {
		if !strings.Contains(tracker, ph.old) {
			t.Fatalf("docs/workers.md's tracker host lines no longer mention %q:\n%s", ph.old, tracker)
		}
		tracker = strings.ReplaceAll(tracker, ph.old, ph.new)
	}
	script, err := waitAfterServer(tracker)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := doltEnv(home)
	ready := filepath.Join(dir, "ready")
	pidFile := filepath.Join(dir, "server.pid")
	logPath := filepath.Join(dir, "out.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	readLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }

	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	proc.SetGroup(cmd)
	proc.EndGroupOnCancel(cmd, 5*time.Second)
	cmd.Dir = dir
	cmd.Env = append(env, "RALPHD_TEST_READY="+ready, "RALPHD_TEST_PID="+pidFile)
	// A file, not a pipe: the server outlives sh and keeps it open, and Wait
	// would wait for a pipe's end.
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopServer(t, cmd.Process.Pid, pidFile) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// Wait, as a person would for "Server ready", until the server accepts
	// connections; then let the script go on to its check.
	hostPort := net.JoinHostPort(addr, strconv.Itoa(port))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for listening := false; !listening; {
		select {
		case err := <-done:
			t.Fatalf("docs/workers.md's tracker host lines ended (%v) before the server listened on %s:\n%s", err, hostPort, readLog())
		case <-ctx.Done():
			t.Fatalf("no server on %s after %v:\n%s", hostPort, time.Minute*2, readLog())
		case <-tick.C:
			c, err := net.DialTimeout("tcp", hostPort, time.Second)
			if err == nil {
				_ = c.Close()
				listening = true
			}
		}
	}
	if err := os.WriteFile(ready, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("docs/workers.md's tracker host lines failed (%v):\n%s", err, readLog())
		}
	case <-ctx.Done():
		t.Fatalf("docs/workers.md's check did not end:\n%s", readLog())
	}
	out := readLog()
	// The page's check ran from the network address, and Dolt let root in
	// as a remote user, not root@localhost.
	if !regexp.MustCompile(`root@(%|[0-9.]+%?)`).MatchString(out) {
		t.Fatalf("docs/workers.md's check did not show root logged in from %s:\n%s", addr, out)
	}

	// As bd does: root, the password from BEADS_DOLT_PASSWORD, from another
	// host; `bd init --server` creates the database and commits to it.
	sql := func(pw, q string) (string, error) {
		c := exec.CommandContext(ctx, "dolt", "--host", addr, "--port", strconv.Itoa(port), "--user", "root", "--no-tls", "sql", "-q", q)
		proc.SetGroup(c)
		proc.EndGroupOnCancel(c, time.Second)
		c.Dir, c.Env = dir, append(slices.Clip(env), "DOLT_CLI_PASSWORD="+pw)
		b, err := c.CombinedOutput()
		return string(b), err
	}
	q := "create database p; use p; create table issues (id varchar(32) primary key); insert into issues values ('p-1'); call dolt_commit('-Am', 'create p-1'); select count(*) from dolt_log"
	if out, err := sql(password, q); err != nil {
		t.Fatalf("logging in as bd would (root, docs/workers.md's password, from %s): %v\n%s", addr, err, out)
	}
	if _, err := os.Stat(filepath.Join(srv, "p", ".dolt")); err != nil {
		t.Fatalf("database p is not in docs/workers.md's data dir: %v", err)
	}
	// The password is what lets root in: a wrong one is refused.
	out, err = sql("not-"+password, "select 1")
	if err == nil || !strings.Contains(out, "1045") {
		t.Fatalf("root with a wrong password from %s: err %v, want Error 1045:\n%s", addr, err, out)
	}
}

// trackerLines returns the shell lines of docs/workers.md's "Many machines"
// block that run before the project's `bd init` (the password's export and
// the tracker host's set-up), and the password they export.
func trackerLines(page string) (lines, password string, err error) {
	_, sec, ok := strings.Cut(page, "\n## Many machines\n")
	if !ok {
		return "", "", errors.New(`docs/workers.md has no "## Many machines" section`)
	}
	_, block, ok := strings.Cut(sec, "```sh\n")
	if !ok {
		return "", "", errors.New(`docs/workers.md's "Many machines" has no sh block`)
	}
	block, _, _ = strings.Cut(block, "```")
	lines, _, ok = strings.Cut(block, "\n# in the project")
	if !ok {
		return "", "", errors.New(`docs/workers.md's "Many machines" block has no "# in the project" line`)
	}
	m := regexp.MustCompile(`(?m)^export BEADS_DOLT_PASSWORD='([^']+)'$`).FindStringSubmatch(lines)
	if m == nil {
		return "", "", errors.New(`docs/workers.md's "Many machines" block does not export BEADS_DOLT_PASSWORD='...' before "# in the project"`)
	}
	return lines, m[1], nil
}

// waitAfterServer returns the lines as a script that stops at the first
// error, records the pid of the server the line ending in "&" starts,
// and waits after that line until $RALPHD_TEST_READY exists (or ends if
// the server does).
func waitAfterServer(lines string) (string, error) {
	var b strings.Builder
	b.WriteString("set -e\n")
	found := false
	for l := range strings.SplitSeq(lines, "\n") {
		b.WriteString(l + "\n")
		if strings.Contains(l, "dolt sql-server") && strings.HasSuffix(strings.TrimSpace(l), "&") {
			found = true
			b.WriteString(`srv=$!; echo "$srv" > "$RALPHD_TEST_PID"
until [ -e "$RALPHD_TEST_READY" ]; do kill -0 "$srv" 2>/dev/null || { echo "the server exited" >&2; exit 97; }; sleep 0.1; done
`)
		}
	}
	if !found {
		return "", fmt.Errorf("no line starts `dolt sql-server ... &` in docs/workers.md's tracker host lines:\n%s", lines)
	}
	return b.String(), nil
}

// stopServer ends the script's process group (the server outlives sh in
// it): SIGTERM, then SIGKILL if the server has not exited within 15 s.
func stopServer(t *testing.T, pgid int, pidFile string) {
	t.Helper()
	_ = proc.SignalGroup(pgid, syscall.SIGTERM)
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		_ = proc.SignalGroup(pgid, syscall.SIGKILL)
		return
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		st, err := proc.ReadStat(pid)
		if err != nil || st.Gone() || st.PGID != pgid {
			return
		}
	}
	t.Logf("dolt sql-server (pid %d) ignored SIGTERM for 15 s; killing it", pid)
	_ = proc.SignalGroup(pgid, syscall.SIGKILL)
}

// doltEnv is this process's environment without Dolt's and bd's own
// variables, with HOME (where `dolt config --global` writes) set to home.
func doltEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DOLT_") || strings.HasPrefix(kv, "BEADS_") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}

// networkAddr returns an IPv4 address of this machine that is not a
// loopback one, or "" when it has none. A connection to it reaches Dolt
// from that address, as one from another machine would.
func networkAddr() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip := n.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
			return ip.String()
		}
	}
	return ""
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
