package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/scriptedapi"
)

// With checkpointing on, Gemini CLI keeps a git repository of the project
// in ~/.gemini/history and commits in it with every unsafe git option
// allowed, so a hook planted there would run in your next Gemini session.
// Sandboxed, the real Gemini CLI still starts and checkpoints, but its
// repositories and the agent's plant are in a dir of ralphd's: yours has
// none of them.
func TestE2EGeminiCheckpointsStayPrivate(t *testing.T) {
	is := is.New(t)
	e := newCLIE2E(t, geminiCLI(t), forIssue("e2e-a",
		scriptedapi.Bash("mkdir -p ~/.gemini/history/planted/.git/hooks && echo 'touch /tmp/pwned' > ~/.gemini/history/planted/.git/hooks/pre-commit && echo planted"),
		scriptedapi.Bash(`bd close e2e-a --reason "echo planted passes (exit 0)"`).Expect(scriptedapi.Contains("planted")),
		scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
	))
	writeFile(t, filepath.Join(e.home, ".gemini", "settings.json"),
		`{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true, "checkpointing": {"enabled": true}}, "privacy": {"usageStatisticsEnabled": false}}`)
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")

	_, stderr, code := e.ralphd("build", "1", "--agent", "gemini", "--sandbox", "bwrap")
	t.Logf("ralphd build: exit %d\n%s", code, stderr)
	is.NoErr(e.srv.Verify())
	is.Equal(code, 0) // checkpointing works in the sandbox
	mine, _ := os.ReadDir(filepath.Join(e.home, ".gemini", "history"))
	is.Equal(len(mine), 0) // nothing in the user's checkpoint dir
	private := filepath.Join(e.home, ".cache", "ralph", "sandbox", "*.private", e.home, ".gemini", "history")
	planted, _ := filepath.Glob(filepath.Join(private, "planted", ".git", "hooks", "pre-commit"))
	is.Equal(len(planted), 1) // the plant went to ralphd's dir
	repos, _ := filepath.Glob(filepath.Join(private, "*", ".git"))
	var own []string
	for _, r := range repos {
		if !strings.Contains(r, "/planted/") {
			own = append(own, r)
		}
	}
	t.Logf("Gemini CLI's own checkpoint repositories: %v", own)
	is.True(len(own) >= 1) // and so did Gemini CLI's own repository
}
