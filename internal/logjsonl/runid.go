// Run IDs name ralphd's runs. One run has one ID, everywhere: its
// log file, its report, its history records, `ralphd status` and the
// run_start event. IDs from older versions and the bash loop's log names
// are still read.

package logjsonl

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// RunIDLayout is the time part of an ID: the run's start, in UTC, to the second.
const RunIDLayout = "20060102T150405Z"

// Older names a run ID may still take:
const (
	// legacyReportLayout is ralphd's build/plan report ID before IDs were
	// unified: UTC without the Z, plus four hex digits.
	legacyReportLayout = "20060102T150405"
	// LegacyLogLayout is the bash loop's (and older ralphd's) log name, in
	// local time, with an optional -N suffix for names already taken.
	LegacyLogLayout = "2006-01-02T15-04-05"
)

// NewRunID returns the ID of a run started at start: its UTC start time and
// eight random hex digits, such as 20261123T190040Z-5c602e8c.
func NewRunID(start time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return start.UTC().Format(RunIDLayout) + "-" + hex.EncodeToString(b[:])
}

// ParseRunID returns the start time an ID or a legacy name carries, to the
// second. It accepts IDs from NewRunID, the older report IDs
// (20261123T185936-5286) and the bash loop's log names
// (2026-11-23T18-59-36, 2026-11-23T18-59-36-2, in local time), each with
// or without a .log, .md or .json extension.
func ParseRunID(s string) (time.Time, bool) {
	for _, ext := range []string{".log", ".md", ".json"} {
		s = strings.TrimSuffix(s, ext)
	}
	switch {
	case len(s) >= len(RunIDLayout) && s[len(RunIDLayout)-1] == 'Z':
		t, err := time.Parse(RunIDLayout, s[:len(RunIDLayout)])
		return t, err == nil && suffixOK(s[len(RunIDLayout):], isLowerHex)
	case len(s) >= len(LegacyLogLayout) && strings.Count(s[:len(LegacyLogLayout)], "-") == 4:
		t, err := time.ParseInLocation(LegacyLogLayout, s[:len(LegacyLogLayout)], time.Local)
		return t, err == nil && suffixOK(s[len(LegacyLogLayout):], isDigit)
	case len(s) >= len(legacyReportLayout):
		t, err := time.Parse(legacyReportLayout, s[:len(legacyReportLayout)])
		return t, err == nil && suffixOK(s[len(legacyReportLayout):], isLowerHex)
	}
	return time.Time{}, false
}

// suffixOK accepts "" or "-" followed by one or more runes that pass ok.
func suffixOK(rest string, ok func(rune) bool) bool {
	if rest == "" {
		return true
	}
	digits, found := strings.CutPrefix(rest, "-")
	if !found || digits == "" {
		return false
	}
	for _, r := range digits {
		if !ok(r) {
			return false
		}
	}
	return true
}

func isLowerHex(r rune) bool { return isDigit(r) || ('a' <= r && r <= 'f') }
func isDigit(r rune) bool    { return '0' <= r && r <= '9' }

// RunEntry is one stored run (a log or a report) for ordering and lookup.
type RunEntry struct {
	ID       string    // the file's base name without extension
	Start    time.Time // from the ID (zero when it is not one)
	Modified time.Time // the file's modification time
}

// CompareRuns orders entries oldest first: by the start time in their ID, then
// (runs started in the same second, which one lock keeps apart) by when
// their file was last written, then by ID. Names that are not IDs go by
// their modification time alone.
func CompareRuns(a, b RunEntry) int {
	at, bt := a.Start, b.Start
	if at.IsZero() {
		at = a.Modified
	}
	if bt.IsZero() {
		bt = b.Modified
	}
	if c := at.Compare(bt); c != 0 {
		return c
	}
	if c := a.Modified.Compare(b.Modified); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// ResolveRun finds the run a user named among entries: "last" (or "latest")
// for the newest by [CompareRuns], an exact ID, a prefix of exactly one ID, or
// any name [ParseRunID] reads (an old log name for a run, say) whose start
// second is exactly one entry's.
func ResolveRun(entries []RunEntry, want string) (RunEntry, error) {
	if len(entries) == 0 {
		return RunEntry{}, ErrNoRuns
	}
	if want == "last" || want == "latest" {
		return slices.MaxFunc(entries, CompareRuns), nil
	}
	want = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(want, ".log"), ".md"), ".json")
	var prefixed, sameSecond []RunEntry
	t, isID := ParseRunID(want)
	for _, e := range entries {
		if e.ID == want {
			return e, nil
		}
		if strings.HasPrefix(e.ID, want) {
			prefixed = append(prefixed, e)
		}
		if isID && !e.Start.IsZero() && e.Start.Equal(t) {
			sameSecond = append(sameSecond, e)
		}
	}
	for _, match := range [][]RunEntry{prefixed, sameSecond} {
		switch len(match) {
		case 0:
			continue
		case 1:
			return match[0], nil
		}
		return RunEntry{}, fmt.Errorf("%q matches %d runs (%s); give more of the ID", want, len(match), ids(match))
	}
	return RunEntry{}, fmt.Errorf("no run %q", want)
}

// ErrNoRuns is ResolveRun's error when there is no run at all.
var ErrNoRuns = errors.New("no runs recorded yet")

func ids(es []RunEntry) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.ID
	}
	return strings.Join(s, ", ")
}
