package standin

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// Server mode. Real bd can keep its data in a shared Dolt sql-server
// (`bd init --server --server-host H --server-port P --external`); the
// committed .beads/metadata.json then carries the mode to every clone, and
// clones on many machines share one tracker. The stand-in has no SQL
// server: its "server" at H:P is the directory
// $BD_STANDIN_SERVER_ROOT/H_P, holding the same store an embedded
// workspace keeps in .beads/embeddeddolt, under the same file lock. The
// server is "running" while that directory exists; otherwise every command
// fails fast with the error real bd prints for an unreachable server.
//
// Claims in server mode are optimistic transactions, as on a real Dolt
// server: a claim reads the data, releases the lock for a short window
// (BD_STANDIN_TXN_WINDOW, default 10ms) and commits only if nobody else
// committed meanwhile. A claim that loses such a race fails with Dolt's
// "Error 1213 (40001): serialization failure" and exit 1, exactly as
// recorded, instead of waiting; clients must retry. BD_STANDIN_CONFLICTS=1
// turns the same behaviour on for embedded workspaces, so that the retry
// path can be tested without a server.
const (
	serverRootEnv = "BD_STANDIN_SERVER_ROOT"
	conflictsEnv  = "BD_STANDIN_CONFLICTS"
	txnWindowEnv  = "BD_STANDIN_TXN_WINDOW"

	defaultTxnWindow = 10 * time.Millisecond

	// serializationFailure is the error text a real Dolt server gives a
	// transaction that lost a race (claim-race-server.txt).
	serializationFailure = "dolt commit: Error 1213 (40001): serialization failure: this transaction conflicts with a committed transaction from another client, try restarting transaction."
)

// serverAddr is the Dolt sql-server a server-mode workspace talks to.
type serverAddr struct {
	host     string
	port     int
	database string
}

func (a *serverAddr) hostPort() string {
	return net.JoinHostPort(a.host, strconv.Itoa(a.port))
}

// unreachable is the error bd prints when the server does not answer.
func (a *serverAddr) unreachable() string {
	hp := a.hostPort()
	return fmt.Sprintf("failed to open database: Dolt server unreachable at %s: dial tcp %s: connect: connection refused\n\nThe Dolt server may not be running. Try:\n  bd dolt start", hp, hp)
}

// serverDir returns the directory that stands for the server at a, or ""
// when no stand-in server root is configured.
func serverDir(env map[string]string, a *serverAddr) string {
	root := env[serverRootEnv]
	if root == "" || a.host == "" || a.port <= 0 {
		return ""
	}
	return filepath.Join(root, fmt.Sprintf("%s_%d", a.host, a.port))
}

// applyServerEnv applies bd's BEADS_DOLT_SERVER_* overrides to ws.
func applyServerEnv(ws *workspace, env map[string]string) {
	switch strings.ToLower(env["BEADS_DOLT_SERVER_MODE"]) {
	case "1", "true", "yes", "on", "server":
		if ws.server == nil {
			ws.server = &serverAddr{database: ws.dbName}
		}
	}
	if ws.server == nil {
		return
	}
	if h := env["BEADS_DOLT_SERVER_HOST"]; h != "" {
		ws.server.host = h
	}
	if p, err := strconv.Atoi(env["BEADS_DOLT_SERVER_PORT"]); err == nil && p > 0 {
		ws.server.port = p
	}
	if d := env["BEADS_DOLT_SERVER_DATABASE"]; d != "" {
		ws.server.database = d
	}
	ws.dbName = ws.server.database
}

// connect points a server-mode workspace at its server's store. It
// returns the unreachable error when the server is not "running".
func (ws *workspace) connect(env map[string]string) error {
	if ws.server == nil {
		return nil
	}
	dir := serverDir(env, ws.server)
	if dir == "" {
		return fmt.Errorf("%s", ws.server.unreachable())
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s", ws.server.unreachable())
	}
	ws.storeDir = dir
	return nil
}

// optimistic reports whether this command runs as an optimistic
// transaction that can fail with a serialization failure: claims, in
// server mode or with the conflicts switch on.
func (inv *invocation) optimistic() bool {
	if !inv.fl.boolean("claim") || (inv.cmd.name != "update" && inv.cmd.name != "ready") {
		return false
	}
	if inv.ws.server != nil {
		return true
	}
	switch strings.ToLower(inv.env[conflictsEnv]) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// txnWindow is how long an optimistic claim keeps its snapshot open.
func (inv *invocation) txnWindow() time.Duration {
	if d, err := time.ParseDuration(inv.env[txnWindowEnv]); err == nil && d >= 0 {
		return d
	}
	return defaultTxnWindow
}

// serializationFailed prints a lost transaction the way bd does: for
// `update --claim`, one "Error claiming" line per claimed issue on
// stderr; for `ready --claim --json`, the error object on stdout.
func (inv *invocation) serializationFailed(stdout, stderr io.Writer, claimed []string) int {
	if inv.cmd.name == "update" {
		for _, id := range claimed {
			fmt.Fprintf(stderr, "Error claiming %s: %s\n", id, serializationFailure)
		}
		return 1
	}
	inv.stdout, inv.stderr = stdout, stderr
	return inv.failJSON(true, serializationFailure)
}

// buffered swaps the invocation's output for buffers, so that a claim's
// output can be dropped when its transaction fails.
func (inv *invocation) buffered() (out, errOut *bytes.Buffer, restore func()) {
	out, errOut = &bytes.Buffer{}, &bytes.Buffer{}
	stdout, stderr := inv.stdout, inv.stderr
	inv.stdout, inv.stderr = out, errOut
	return out, errOut, func() { inv.stdout, inv.stderr = stdout, stderr }
}

// serverWarnings prints the warnings real bd gives on server-mode
// commands: a .beads directory others can read, and (until the clone's
// first use writes .beads/dolt-server.port) a port kept in metadata.json.
func (inv *invocation) serverWarnings() {
	ws := inv.ws
	if ws.server == nil {
		return
	}
	if st, err := os.Stat(ws.beadsDir); err == nil && st.Mode().Perm() != 0o700 {
		fmt.Fprintf(inv.stderr, "Warning: %s has permissions %#o (recommended: 0700). Run: chmod 700 %s\n", ws.beadsDir, st.Mode().Perm(), ws.beadsDir)
	}
	portFile := filepath.Join(ws.beadsDir, "dolt-server.port")
	if _, err := os.Stat(portFile); err == nil {
		return // the port file is the primary source once it exists
	}
	if m, err := readMetadata(ws.beadsDir); err == nil && m.DoltServerPort != 0 {
		// The first use in a clone writes the port file (ignored by git).
		_ = atomicfile.Write(portFile, []byte(strconv.Itoa(m.DoltServerPort)), 0o644)
		fmt.Fprint(inv.stderr, "Warning: dolt_server_port in metadata.json is deprecated (can cause cross-project data leakage).\n"+
			"  The port file (.beads/dolt-server.port) is now the primary source.\n"+
			"  Remove dolt_server_port from .beads/metadata.json to silence this warning.\n")
	}
}
