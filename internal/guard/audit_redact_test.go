package guard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/state"
)

// A secret of the guard's environment in a bd call's arguments reaches
// neither the audit file nor the run log, and the caller's argv is left
// as it was.
func TestAuditRedactsSecrets(t *testing.T) {
	is := is.New(t)
	const secret = "sk-ant-api03-AUDITSECRET42"
	t.Setenv("ANTHROPIC_API_KEY", secret)
	dir := t.TempDir()
	audit, logPath := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "run.log")
	is.NoErr(os.WriteFile(logPath, nil, 0o600))
	argv := []string{"update", "t-a", "--notes", "key " + secret}
	sink := auditSink(audit, logPath, "3")
	is.NoErr(sink(context.Background(), time.Now(), state.BDCall{Argv: argv, Allowed: true}))
	is.Equal(argv[3], "key "+secret) // not changed under the caller
	for _, p := range []string{audit, logPath} {
		data, err := os.ReadFile(p)
		is.NoErr(err)
		is.True(!strings.Contains(string(data), secret))
		is.True(strings.Contains(string(data), "key [redacted]"))
	}
}
