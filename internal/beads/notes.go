package beads

import (
	"context"
	"errors"
	"fmt"
)

// setNotesArgs is the argv of SetNotes's first try (without --json).
func setNotesArgs(id, text string) []string { return []string{"update", id, "--notes", text} }

// SetNotes replaces an issue's notes with text ("" clears them), as a
// restore does, and returns the issue.
//
// bd 1.0.5 replaces the notes with `update --notes`, and SetNotes is that
// one call there. From bd's changelog, not verified against that version:
// later bds refuse `--notes` over existing notes unless forced, and refuse
// `--notes ""` in favour of `--clear-notes`. So when `--notes` fails, or
// leaves other notes than text, SetNotes clears the notes (`--notes ""`,
// else `--clear-notes`) and appends text to the empty notes, which every
// version does alike. The notes are text ralphd read from the tracker, so
// they are not redacted again.
func (c *Client) SetNotes(ctx context.Context, id, text string) (Issue, error) {
	if text == "" {
		return c.clearNotes(ctx, id)
	}
	is, err := c.one(ctx, id, false, setNotesArgs(id, text)...)
	if err == nil && is.Notes == text {
		return is, nil
	}
	if err != nil && !refusedByBD(err) {
		return Issue{}, err
	}
	first := err
	if is, err = c.clearNotes(ctx, id); err != nil {
		return Issue{}, errors.Join(first, err)
	}
	if is, err = c.one(ctx, id, false, appendNotesArgs(id, text)...); err != nil {
		return Issue{}, errors.Join(first, err)
	}
	if is.Notes != text {
		return is, fmt.Errorf("bd update %s: the notes read %q after the restore, want %q", id, truncate(is.Notes, 60), truncate(text, 60))
	}
	return is, nil
}

// clearNotes empties an issue's notes: `--notes ""` (bd 1.0.5), else
// `--clear-notes` (from bd's changelog, not verified against that
// version).
func (c *Client) clearNotes(ctx context.Context, id string) (Issue, error) {
	is, err := c.one(ctx, id, false, setNotesArgs(id, "")...)
	if err == nil && is.Notes == "" {
		return is, nil
	}
	if err != nil && !refusedByBD(err) {
		return Issue{}, err
	}
	return c.one(ctx, id, false, "update", id, "--clear-notes")
}

// refusedByBD reports whether err is bd refusing a call (a non-zero exit
// or an error object), as opposed to an unknown issue, no tracker, a
// timeout or a cancellation, which another form of the call would not
// change.
func refusedByBD(err error) bool {
	if errors.Is(err, ErrIssueNotFound) || errors.Is(err, ErrNotInitialized) {
		return false
	}
	var ee *ExitError
	var re *ReportedError
	return errors.As(err, &ee) || errors.As(err, &re)
}
