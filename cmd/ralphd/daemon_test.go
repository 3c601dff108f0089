package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestDaemonNotify runs the daemon as systemd would (Type=notify, with a
// watchdog) and checks the notify messages it sends, in order, up to a
// SIGTERM: READY=1, then STATUS= and WATCHDOG=1, then STOPPING=1. It also
// checks the daemon exits 0 on SIGTERM.
func TestDaemonNotify(t *testing.T) {
	is := is.New(t)
	bdDir := standinBin(t)
	work := t.TempDir()
	repo := filepath.Join(work, "repo")
	is.NoErr(os.Mkdir(repo, 0o755))
	env := append(os.Environ(),
		"PATH="+bdDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+work, "XDG_STATE_HOME="+filepath.Join(work, "state"), "XDG_CONFIG_HOME="+filepath.Join(work, "config"),
		"GIT_CONFIG_NOSYSTEM=1", "BEADS_ACTOR=Test User",
	)
	for _, args := range [][]string{{"git", "init", "-q"}, {filepath.Join(bdDir, "bd"), "init", "--prefix", "t", "--quiet", "--non-interactive"}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = repo, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}

	sock := filepath.Join(work, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	is.NoErr(err)
	defer conn.Close()

	daemon := exec.Command("ralphd", "daemon", "--agent-cmd", "true", "--poll", "1h")
	daemon.Dir = repo
	daemon.Env = append(env, "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=200000")
	var stderr strings.Builder
	daemon.Stderr = &stderr
	is.NoErr(daemon.Start())

	var got []string
	seen := map[string]bool{}
	read := func(until string) {
		t.Helper()
		buf := make([]byte, 4096)
		for !seen[until] {
			is.NoErr(conn.SetReadDeadline(time.Now().Add(30 * time.Second)))
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("waiting for %s: %v (got %q)\nstderr:\n%s", until, err, got, stderr.String())
			}
			msg := string(buf[:n])
			key, _, _ := strings.Cut(msg, "=")
			seen[key] = true
			got = append(got, msg)
		}
	}
	read("WATCHDOG")
	read("STATUS")
	is.NoErr(daemon.Process.Signal(syscall.SIGTERM))
	read("STOPPING")
	is.NoErr(daemon.Wait()) // exit 0 on SIGTERM: systemd must not restart a stopped daemon

	is.Equal(got[0], "READY=1")             // READY first
	is.Equal(got[len(got)-1], "STOPPING=1") // STOPPING last
	var status string
	for _, m := range got {
		if strings.HasPrefix(m, "STATUS=") {
			status = m
		}
	}
	is.True(strings.HasPrefix(status, "STATUS=idle: 0 ready")) // a live, short state
}
