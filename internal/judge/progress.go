package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Signals is one snapshot of everything that can show progress on an issue,
// taken after an attempt. Strings are compared as given: the caller decides
// what an empty GitHead or DiffHash means, and must be consistent.
type Signals struct {
	// FailingChecks names the checks that failed (the verify command,
	// acceptance commands). It is a set: order and duplicates do not matter.
	FailingChecks []string
	Fingerprint   string // of the attempt's failure line, "" when none
	GitHead       string // commit id of HEAD
	DiffHash      string // hash of the working-tree diff
	IssueHash     string // see IssueHash
	ToolCalls     int    // tool calls the agent made during the attempt
}

// Verdict is the result of comparing two snapshots.
type Verdict struct {
	Progress bool
	// NoOp is set when the agent made no tool call and neither git nor the
	// issue changed: the iteration did nothing, which is never success.
	NoOp bool
	// Reasons says why, one short sentence each, in a fixed order.
	Reasons []string
}

// Progress compares the snapshot after the previous attempt on an issue
// (prev) with the one after this attempt (cur). For the first attempt, pass
// a snapshot taken before it as prev.
//
// Progress was made when any of these changed: a check that failed in prev
// passes in cur; the fingerprint differs (including one appearing or
// clearing); git HEAD moved; the working-tree diff hash changed; the issue
// hash changed.
//
// One exception: when cur.ToolCalls is 0 and HEAD, the diff and the issue
// are all unchanged, the agent did nothing, so a change in checks or
// fingerprint comes from the environment (a flaky test) and is not
// progress. The verdict is then NoOp with no progress.
func Progress(prev, cur Signals) Verdict {
	var v Verdict
	workChanged := false
	var outcome []string

	nowFailing := make(map[string]bool, len(cur.FailingChecks))
	for _, c := range cur.FailingChecks {
		nowFailing[c] = true
	}
	fixed := map[string]bool{}
	for _, c := range prev.FailingChecks {
		if !nowFailing[c] {
			fixed[c] = true
		}
	}
	for _, c := range slices.Sorted(maps.Keys(fixed)) {
		outcome = append(outcome, fmt.Sprintf("check %s now passes", c))
	}
	switch {
	case prev.Fingerprint == cur.Fingerprint:
	case cur.Fingerprint == "":
		outcome = append(outcome, fmt.Sprintf("the earlier error is gone (fingerprint %s)", prev.Fingerprint))
	case prev.Fingerprint == "":
		outcome = append(outcome, fmt.Sprintf("a new error appeared (fingerprint %s)", cur.Fingerprint))
	default:
		outcome = append(outcome, fmt.Sprintf("the error changed (fingerprint %s, before %s)", cur.Fingerprint, prev.Fingerprint))
	}
	if prev.GitHead != cur.GitHead {
		workChanged = true
		v.Reasons = append(v.Reasons, "git HEAD moved")
	}
	if prev.DiffHash != cur.DiffHash {
		workChanged = true
		v.Reasons = append(v.Reasons, "working-tree diff changed")
	}
	if prev.IssueHash != cur.IssueHash {
		workChanged = true
		v.Reasons = append(v.Reasons, "issue record changed")
	}

	if cur.ToolCalls <= 0 && !workChanged {
		v.NoOp = true
		v.Reasons = []string{"no tool calls and no changes"}
		if len(outcome) > 0 {
			v.Reasons = append(v.Reasons, "not progress, as the agent did no work: "+strings.Join(outcome, "; "))
		}
		return v
	}
	v.Reasons = append(outcome, v.Reasons...)
	if len(v.Reasons) == 0 {
		v.Reasons = []string{"no check, fingerprint, commit, diff or issue change"}
		return v
	}
	v.Progress = true
	return v
}

// IssueHash hashes the parts of an issue's bd record that show progress:
// status, notes, and the ids of its child and blocker issues (order does
// not matter). It returns 24 hex digits.
func IssueHash(status, notes string, children, blockers []string) string {
	h := sha256.New()
	write := func(tag, s string) {
		fmt.Fprintf(h, "%s %d:%s\n", tag, len(s), s)
	}
	write("status", status)
	write("notes", notes)
	for _, c := range slices.Sorted(slices.Values(children)) {
		write("child", c)
	}
	for _, b := range slices.Sorted(slices.Values(blockers)) {
		write("blocker", b)
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}
