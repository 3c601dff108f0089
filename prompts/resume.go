package prompts

import (
	"fmt"
	"strings"
)

// ResumeData is what the prompt of a resumed BUILD session says.
type ResumeData struct {
	IssueID     string
	Title       string
	Attempt     int
	MaxAttempts int
	// Why says what interrupted the session ("the iteration timeout
	// (30m0s) ended it", ...).
	Why string
	// Found lists what ralphd found once the session had stopped:
	// changes to the tracker it reverted, the checks it ran and their
	// results. Empty when it found nothing to say.
	Found []string
}

// Resume renders the short prompt that resumes an interrupted BUILD
// session: the agent has its earlier conversation, and the full BUILD
// prompt in it, so this says only what happened since and asks it to go
// on. It is ralphd's own text and has no override.
func Resume(d ResumeData) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ralphd: this session on %s %q was interrupted: %s. It resumes now, as attempt %d of %d on %s.\n\n",
		d.IssueID, d.Title, strings.TrimSuffix(d.Why, "."), d.Attempt, d.MaxAttempts, d.IssueID)
	if len(d.Found) == 0 {
		b.WriteString("What ralphd found after it stopped: nothing to report.\n")
	} else {
		b.WriteString("What ralphd found after it stopped:\n")
		for _, f := range d.Found {
			fmt.Fprintf(&b, "- %s\n", strings.TrimSpace(f))
		}
	}
	fmt.Fprintf(&b, "\nWork done in files since the interruption's last tool call may be incomplete: check the work tree before you go on. "+
		"Go on with %s where you left off, under the same rules as in the first message of this session "+
		"(close it only with evidence that its acceptance checks pass).\n", d.IssueID)
	return b.String()
}
