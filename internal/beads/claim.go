package beads

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// RefusalKind says why bd refused a claim.
type RefusalKind int

// The refusals bd 1.0.5 prints for `update --claim` and `ready --claim`
// (contract: claim-*.txt, claim-race-*.txt).
const (
	// RefusedNone: not a claim refusal.
	RefusedNone RefusalKind = iota
	// AlreadyClaimed: "issue already claimed by <holder>".
	AlreadyClaimed
	// NotClaimable: "issue not claimable: status <status>".
	NotClaimable
	// Serialization: a Dolt server's "Error 1213 (40001): serialization
	// failure"; the claim lost a race and should be retried.
	Serialization
	// Stale: bd exited with ExitStale, a compare-and-set that found the
	// issue changed under it; the claim lost a race. From bd's changelog,
	// not verified against that version.
	Stale
)

// ExitStale is the exit code of a bd compare-and-set (--if-status,
// --if-assignee) that found the issue changed. bd 1.0.5 never exits 13.
// From bd's changelog, not verified against that version.
const ExitStale = 13

// Refusal is a parsed claim refusal.
type Refusal struct {
	Kind   RefusalKind
	ID     string // the issue, when bd named it
	Holder string // AlreadyClaimed: the current assignee
	Status string // NotClaimable: the issue's status
}

// ErrSerialization matches an error whose bd message is a Dolt
// serialization failure (server mode's lost race).
var ErrSerialization = errors.New("bd: serialization failure (lost a race; retry)")

// ParseRefusal reads a claim refusal from bd's message: the stderr line
// "Error claiming <id>: issue already claimed by <holder>", "... issue not
// claimable: status <s>", "... dolt commit: Error 1213 (40001):
// serialization failure: ...", or the bare serialization message of
// `ready --claim --json`. It reports false for anything else.
func ParseRefusal(msg string) (Refusal, bool) {
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimSpace(line)
		if r, ok := parseRefusalLine(line); ok {
			return r, true
		}
	}
	return Refusal{}, false
}

func parseRefusalLine(line string) (Refusal, bool) {
	var r Refusal
	rest := line
	if after, ok := strings.CutPrefix(line, "Error claiming "); ok {
		id, tail, ok := strings.Cut(after, ": ")
		if !ok || id == "" || strings.ContainsAny(id, " \t") {
			return Refusal{}, false
		}
		r.ID, rest = id, tail
	}
	switch {
	case isSerialization(rest):
		r.Kind = Serialization
	case strings.HasPrefix(rest, "issue already claimed by "):
		r.Kind, r.Holder = AlreadyClaimed, strings.TrimPrefix(rest, "issue already claimed by ")
		if r.Holder == "" {
			return Refusal{}, false
		}
	case strings.HasPrefix(rest, "issue not claimable: status "):
		r.Kind, r.Status = NotClaimable, strings.TrimPrefix(rest, "issue not claimable: status ")
		if r.Status == "" || strings.ContainsAny(r.Status, " \t") {
			return Refusal{}, false
		}
	default:
		return Refusal{}, false
	}
	if r.ID == "" && r.Kind != Serialization {
		return Refusal{}, false // only the serialization message comes bare
	}
	return r, true
}

// isSerialization reports a Dolt serialization failure message.
func isSerialization(s string) bool {
	return strings.Contains(s, "Error 1213 (40001)") && strings.Contains(s, "serialization failure")
}

// RefusalOf extracts the claim refusal carried by err (an *ExitError or
// *ReportedError), if any. An exit with ExitStale and no message ralphd
// knows is a Stale refusal.
func RefusalOf(err error) (Refusal, bool) {
	var ee *ExitError
	if errors.As(err, &ee) {
		if r, ok := ParseRefusal(ee.Message); ok {
			return r, true
		}
		if r, ok := ParseRefusal(ee.Stderr); ok {
			return r, true
		}
		if ee.Code == ExitStale {
			return Refusal{Kind: Stale}, true // from bd's changelog, not verified against that version
		}
		return Refusal{}, false
	}
	var re *ReportedError
	if errors.As(err, &re) {
		return ParseRefusal(re.Message)
	}
	return Refusal{}, false
}

// ClaimFilter is what `bd ready --claim` passes over.
type ClaimFilter struct {
	ExcludeLabels []string // issues with any of these labels (the stuck label)
	ExcludeTypes  []string // issues of these types (`--exclude-type`)
}

// ReadyClaim runs `bd ready --claim`: it claims the first ready issue that
// has no assignee, for the client's actor. ok is false when nothing was
// claimable, which is also what a racer that lost in embedded mode gets.
// In server mode a lost race fails with an error matching
// ErrSerialization. Issues f names are passed over.
func (c *Client) ReadyClaim(ctx context.Context, f ClaimFilter) (issue Issue, ok bool, err error) {
	for _, l := range f.ExcludeLabels {
		if err := checkLabel(l); err != nil {
			return Issue{}, false, fmt.Errorf("bd ready --claim: %w", err)
		}
	}
	for _, t := range f.ExcludeTypes {
		if err := checkType(t); err != nil {
			return Issue{}, false, fmt.Errorf("bd ready --claim: %w", err)
		}
	}
	args := readyClaimArgs(f)
	if c.OnWrite != nil {
		// A claim of an issue its argv does not name, told before and
		// after the call; the issue it took is told as its claim in
		// between, once it is known.
		w := &Write{Args: args, Actor: c.Actor}
		c.OnWrite(w)
		defer c.OnWrite(w)
	}
	issues, err := c.issues(ctx, args)
	if err != nil {
		return Issue{}, false, err
	}
	switch len(issues) {
	case 0:
		return Issue{}, false, nil
	case 1:
		if c.OnWrite != nil {
			w := &Write{Args: claimArgs(issues[0].ID), Actor: c.Actor}
			c.OnWrite(w)
			c.OnWrite(w)
		}
		return issues[0], true, nil
	}
	return Issue{}, false, newBadJSON(nil, "bd ready --claim: want at most one issue, got %d", len(issues))
}

// Release gives a claim up: `bd update <id> --status open --assignee ""`,
// the only release bd 1.0.5 has (any actor may do it; started_at stays).
func (c *Client) Release(ctx context.Context, id string) (Issue, error) {
	return c.one(ctx, id, false, releaseArgs(id)...)
}

// readyClaimArgs is the argv of ReadyClaim (without --json).
func readyClaimArgs(f ClaimFilter) []string {
	args := []string{"ready", "--claim"}
	for _, l := range f.ExcludeLabels {
		args = append(args, "--exclude-label", l)
	}
	for _, t := range f.ExcludeTypes {
		args = append(args, "--exclude-type", t)
	}
	return args
}

// releaseArgs is the argv of Release (without --json).
func releaseArgs(id string) []string {
	return []string{"update", id, "--status", StatusOpen, "--assignee", ""}
}
