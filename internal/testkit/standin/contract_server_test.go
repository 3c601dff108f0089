package standin

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The server-mode part of the second recording session: two clones of one
// project share a Dolt sql-server. The stand-in's server is a directory
// under $BD_STANDIN_SERVER_ROOT (see server.go).

// serverDirOf is the stand-in server directory for <PORT> in s.
func serverDirOf(s *scratch) string {
	return filepath.Join(s.root, "servers", "127.0.0.1_"+testPort)
}

var replayServer = []step{
	setupGo("start the stand-in's server and make clone-a, a git repo", func(s *scratch) {
		s.baseEnv = append(s.baseEnv, serverRootEnv+"="+filepath.Join(s.root, "servers"))
		for _, d := range []string{serverDirOf(s), filepath.Join(s.root, "clone-a")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				s.t.Fatalf("mkdir: %v", err)
			}
		}
		s.git(filepath.Join(s.root, "clone-a"), "init", "-q")
	}),
	fxMode("server-init-clone-a", exitOnly, "the stand-in's init configures no Dolt remote and makes no commit, so it prints only the summary"),
	gitStep("real bd init commits .beads", "<SCRATCH>/clone-a", "add", "-A"),
	gitStep("real bd init commits .beads", "<SCRATCH>/clone-a", "commit", "-q", "-m", "bd init: initialize beads issue tracking"),
	gitStep("the second machine only clones", "<SCRATCH>", "clone", "-q", "<SCRATCH>/clone-a", "<SCRATCH>/clone-b"),
	fx("server-where-clone-a-json"),
	fx("server-create-clone-a-json"),
	fx("server-clone-b-ready-json-no-setup"),
	fx("server-clone-b-show-json-no-setup"),
	fx("server-clone-b-setup"),
	fx("server-create-clone-b-json"),
	fx("server-clone-a-ready-sees-b-json"),
	fx("server-clone-a-show-b-issue-json"),
	fx("server-claim-clone-a-json"),
	fx("server-claim-clone-b-conflict-json"),
	setupGo("stop the server", func(s *scratch) {
		if err := os.Rename(serverDirOf(s), serverDirOf(s)+".stopped"); err != nil {
			s.t.Fatalf("stop server: %v", err)
		}
	}),
	fx("server-down-ready-json-clone-b"),
	fx("server-down-ready-plain-clone-b"),
	fx("server-down-claim-json-clone-b"),
}

// notReplayedServer lists the server-mode fixtures the replay does not run.
var notReplayedServer = map[string]string{
	"server-init-files-clone-a":                 "a find/cat/git pipeline; TestServerModeSharedStore checks metadata.json",
	"server-clone-b-files-after-first-use":      "a find/cat/git pipeline about real Dolt's backup files",
	"server-info-json-clone-b":                  "`bd info --json` is not implemented by the stand-in",
	"server-dolt-show-clone-a":                  "`bd dolt` is not implemented by the stand-in",
	"server-dolt-status-clone-a":                "`bd dolt` is not implemented by the stand-in",
	"server-dolt-status-clone-b":                "`bd dolt` is not implemented by the stand-in",
	"server-dolt-test-clone-b":                  "`bd dolt` is not implemented by the stand-in",
	"server-ping-clone-b":                       "`bd ping` is not implemented by the stand-in",
	"server-env-override-from-embedded-repo":    "the stand-in does not check project identity against the server",
	"server-managed-init":                       "a bd-managed server (`bd init --server` without --external) is not implemented by the stand-in",
	"server-managed-files":                      "a bd-managed server is not implemented by the stand-in",
	"server-managed-dolt-start":                 "a bd-managed server is not implemented by the stand-in",
	"server-managed-dolt-status":                "a bd-managed server is not implemented by the stand-in",
	"server-managed-dolt-status-2":              "a bd-managed server is not implemented by the stand-in",
	"server-managed-dolt-stop":                  "a bd-managed server is not implemented by the stand-in",
	"server-managed-dolt-stop-2":                "a bd-managed server is not implemented by the stand-in",
	"server-managed-ready-after-stop-autostart": "a bd-managed server is not implemented by the stand-in",
}

// TestContractServer replays the server-mode session.
func TestContractServer(t *testing.T) {
	fixtures := loadFixtures(t)
	s := newScratch(t)
	ids := recordedIDs(t, fixtures)
	s.runner.NewID = func(title string) string { return ids[title] }
	s.clock = time.Date(2026, 11, 23, 19, 21, 0, 0, time.UTC)
	replaySteps(t, s, fixtures, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), replayServer)
}
