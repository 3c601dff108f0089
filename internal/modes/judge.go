package modes

import (
	"github.com/ralphd/ralphd/internal/judge"
)

// citesEvidence is the test a close reason must pass in BUILD mode.
func citesEvidence(reason string) bool { return judge.CitesEvidence(reason) }

// previousAttempts is the verbatim record of the issue's last attempts, for
// the next prompt.
func (l *Loop) previousAttempts(issueID string) (string, error) {
	return judge.PromptSection(l.State.AttemptsDir(), issueID)
}
