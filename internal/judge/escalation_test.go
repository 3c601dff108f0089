package judge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func failing(line string, progress bool) Outcome {
	return Outcome{ErrorLine: line, Fingerprint: Fingerprint(line), Progress: progress}
}

func TestEscalationSameErrorDefaults(t *testing.T) {
	is := is.New(t)
	var p Policy // defaults: 2 repeats, 2 shifts
	// The same error, differing only in the line number and timing, four
	// times; the agent edits files each time, so only the fingerprint
	// repeats.
	lines := []string{
		"./calc.go:12:3: undefined: Mul",
		"./calc.go:14:3: undefined: Mul",
		"./calc.go:15:3: undefined: Mul",
		"./calc.go:15:9: undefined: Mul",
	}
	var s State
	var tiers []Tier
	var ds []Decision
	for _, l := range lines {
		var d Decision
		s, d = p.Next(s, failing(l, true))
		tiers = append(tiers, d.Tier)
		ds = append(ds, d)
	}
	is.Equal(tiers, []Tier{TierNone, TierContextExpansion, TierContextExpansion, TierHardStop})

	shift := ds[1]
	is.Equal(shift.Reason, ReasonRepeatedFingerprint)
	is.Equal(shift.Error, lines[1]) // verbatim, not normalised
	is.Equal(shift.Count, 2)
	is.Equal(shift.Forbidden, "./calc.go:<n>:<n>: undefined: Mul")
	is.Equal(shift.Shift, 1)
	is.Equal(shift.MaxShifts, 2)
	is.Equal(shift.Paths, []string{"./calc.go"})
	is.Equal(ds[2].Shift, 2)
	is.Equal(ds[2].Count, 3)

	stop := ds[3]
	is.Equal(stop.Reason, ReasonRepeatedFingerprint)
	is.Equal(stop.Count, 4)
	is.Equal(stop.Attempts, 4)
	is.Equal(stop.Shift, 2)
	fp := Fingerprint(lines[0])
	is.Equal(stop.Fingerprints, []string{fp, fp, fp, fp})
	is.True(s.Stopped)
	is.Equal(s.StuckCount(), 4)

	// Once stopped, it stays stopped, even if the next attempt differs.
	s, d := p.Next(s, failing("KeyError: 'x'", true))
	is.Equal(d.Tier, TierHardStop)
	is.Equal(d.Reason, ReasonRepeatedFingerprint)
	// A pass ends the episode.
	s, d = p.Next(s, Outcome{Passed: true, Progress: true})
	is.Equal(d.Tier, TierNone)
	is.Equal(s, State{})
}

func TestEscalationSequences(t *testing.T) {
	const (
		errA = "AssertionError: expected 0 to be 4"
		errB = "TypeError: x is not a function"
	)
	tests := []struct {
		name    string
		policy  Policy
		history []Outcome
		want    []Tier
		reason  string // of the last decision
	}{
		{"strategy shift for a plain error", Policy{},
			[]Outcome{failing(errA, true), failing(errA, true)},
			[]Tier{TierNone, TierStrategyShift}, ReasonRepeatedFingerprint},
		{"no progress without any error line", Policy{},
			[]Outcome{{}, {}, {}, {}},
			[]Tier{TierNone, TierStrategyShift, TierStrategyShift, TierHardStop}, ReasonNoProgress},
		{"changing errors with progress never escalate", Policy{},
			[]Outcome{failing(errA, true), failing(errB, true), failing(errA, true), failing(errB, true)},
			[]Tier{TierNone, TierNone, TierNone, TierNone}, ""},
		{"changing errors without progress escalate on no progress", Policy{},
			[]Outcome{failing(errA, false), failing(errB, false)},
			[]Tier{TierNone, TierStrategyShift}, ReasonNoProgress},
		{"shifts are not given back when the run resets", Policy{},
			[]Outcome{failing(errA, true), failing(errA, true), failing(errB, true), failing(errB, true), failing(errA, true), failing(errA, true)},
			[]Tier{TierNone, TierStrategyShift, TierNone, TierStrategyShift, TierNone, TierHardStop}, ReasonRepeatedFingerprint},
		{"a pass resets the shifts", Policy{},
			[]Outcome{failing(errA, true), failing(errA, true), failing(errA, true), {Passed: true}, failing(errA, true), failing(errA, true)},
			[]Tier{TierNone, TierStrategyShift, TierStrategyShift, TierNone, TierNone, TierStrategyShift}, ReasonRepeatedFingerprint},
		{"one shift: same error three times, then hard stop", Policy{MaxStrategyShifts: 1},
			[]Outcome{failing(errA, true), failing(errA, true), failing(errA, true)},
			[]Tier{TierNone, TierStrategyShift, TierHardStop}, ReasonRepeatedFingerprint},
		{"no shifts: first trigger stops", Policy{MaxStrategyShifts: -1},
			[]Outcome{failing(errA, true), failing(errA, true)},
			[]Tier{TierNone, TierHardStop}, ReasonRepeatedFingerprint},
		{"higher fingerprint threshold", Policy{FingerprintRepeats: 3},
			[]Outcome{failing(errA, true), failing(errA, true), failing(errA, true)},
			[]Tier{TierNone, TierNone, TierStrategyShift}, ReasonRepeatedFingerprint},
		{"fingerprint wins over no progress", Policy{},
			[]Outcome{failing(errA, false), failing(errA, false)},
			[]Tier{TierNone, TierStrategyShift}, ReasonRepeatedFingerprint},
		{"missing module expands context", Policy{},
			[]Outcome{failing("ModuleNotFoundError: No module named 'yaml'", true), failing("ModuleNotFoundError: No module named 'yaml'", true)},
			[]Tier{TierNone, TierContextExpansion}, ReasonRepeatedFingerprint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var s State
			var got []Tier
			var d Decision
			for _, o := range tt.history {
				s, d = tt.policy.Next(s, o)
				got = append(got, d.Tier)
			}
			is.Equal(got, tt.want)
			is.Equal(d.Reason, tt.reason)
			rs, rd := tt.policy.Replay(tt.history)
			is.Equal(rs, s) // Replay agrees with stepping
			is.Equal(rd, d)
		})
	}
}

func TestEscalationDoesNotAliasState(t *testing.T) {
	is := is.New(t)
	var p Policy
	s1, _ := p.Next(State{}, failing("Error: a", true))
	s1.Fingerprints = append(make([]string, 0, 8), s1.Fingerprints...)
	s2, _ := p.Next(s1, failing("Error: b", true))
	s3, _ := p.Next(s1, failing("Error: c", true))
	is.Equal(s2.Fingerprints[1], Fingerprint("Error: b"))
	is.Equal(s3.Fingerprints[1], Fingerprint("Error: c"))
	is.Equal(len(s1.Fingerprints), 1)
}

func TestEscalationCapsFingerprints(t *testing.T) {
	is := is.New(t)
	var p Policy
	var s State
	for i := range 30 {
		s, _ = p.Next(s, failing(fmt.Sprintf("Error: case %d", i), true))
	}
	is.Equal(len(s.Fingerprints), 20)
	is.Equal(s.Fingerprints[19], Fingerprint("Error: case 29"))
	is.Equal(s.Attempts, 30)
}

func TestTierString(t *testing.T) {
	is := is.New(t)
	is.Equal(TierNone.String(), "none")
	is.Equal(TierStrategyShift.String(), "strategy-shift")
	is.Equal(TierContextExpansion.String(), "context-expansion")
	is.Equal(TierHardStop.String(), "hard-stop")
	is.Equal(Tier(9).String(), "tier(9)")
}

func TestMissingInfo(t *testing.T) {
	tests := []struct {
		line    string
		missing bool
		paths   []string
	}{
		{"./calc_test.go:6:5: undefined: Mul", true, []string{"./calc_test.go"}},
		{"vet: ./calc_test.go:6:5: undefined: Mul", true, []string{"./calc_test.go"}},
		{"open config/app.yaml: no such file or directory", true, []string{"config/app.yaml"}},
		{"FileNotFoundError: [Errno 2] No such file or directory: '/tmp/judgefx/missing-config.yaml'", true, []string{"/tmp/judgefx/missing-config.yaml"}},
		{"ModuleNotFoundError: No module named 'pkg.helpers'", true, nil},
		{"NameError: name 'undefined_name' is not defined", true, nil},
		{"ReferenceError: notDefined is not defined", true, nil},
		{"Error: Cannot find module 'lodash-missing'", true, nil},
		{"● Test suite failed to run: Cannot find module './userService' from 'src/user.test.ts'", true, []string{"./userService", "src/user.test.ts"}},
		{"src/user.ts(12,5): error TS2304: Cannot find name 'fetchUser'.", true, []string{"src/user.ts"}},
		{"error[E0425]: cannot find value `c` in this scope", true, nil},
		{"error[E0432]: unresolved import `std::collections::HashMapp`", true, nil},
		{`main.go:4:2: no required module provides package github.com/x/y; to add it: go get github.com/x/y`, true, []string{"main.go"}},
		{`cannot find package "github.com/foo/bar" in any of: /usr/local/go/src/github.com/foo/bar (from $GOROOT)`, true, nil}, // an import path is not a file
		{"Error: ENOENT: no such file or directory, open 'data/seed.json'", true, []string{"data/seed.json"}},
		{"panic: runtime error: index out of range [5] with length 3", false, nil},
		{"AssertionError: expected 0 to be 4", false, nil},
		{"calc_test.go:11: Add(2, 2) = 0, want 4", false, nil},
		{"", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			is := is.New(t)
			missing, paths := MissingInfo(tt.line)
			is.Equal(missing, tt.missing)
			is.Equal(paths, tt.paths)
		})
	}
}

func TestStuckNote(t *testing.T) {
	is := is.New(t)
	var p Policy
	line := "FileNotFoundError: [Errno 2] No such file or directory: 'conf/app.yaml'"
	_, d := p.Replay([]Outcome{failing(line, true), failing(line, true), failing(line, true), failing(line, true)})
	is.Equal(d.Tier, TierHardStop)
	note := StuckNote("rt-2j9", d, []string{"reopened the issue after a failed close"})
	is.True(strings.HasPrefix(note, "STUCK: ralphd stopped working on rt-2j9 after 4 attempts: the same error 4 times in a row, after 2 strategy shifts (reason: repeated_fingerprint).\n"))
	fp := Fingerprint(line)
	is.True(strings.Contains(note, fmt.Sprintf("Fingerprints per attempt: 1=%s 2=%s 3=%s 4=%s\n", fp, fp, fp, fp)))
	is.True(strings.Contains(note, "Last error (verbatim): "+line+"\n"))
	is.True(strings.Contains(note, "Auto-fixed: reopened the issue after a failed close.\n"))
	is.True(strings.Contains(note, "Recommended next action: add the file the error says is missing (conf/app.yaml), or correct the path in the issue."))
	is.True(strings.HasSuffix(note, "Then run `ralphd reset rt-2j9` (or let PLANNING remove the ralph:stuck label) so ralphd starts the issue afresh."))

	_, d = p.Replay([]Outcome{{}, {}, {}, {}})
	note = StuckNote("rt-x", d, nil)
	is.True(strings.Contains(note, "no progress 4 times in a row"))
	is.True(strings.Contains(note, "Fingerprints per attempt: 1=none 2=none 3=none 4=none\n"))
	is.True(strings.Contains(note, "Auto-fixed: nothing.\n"))
	is.True(!strings.Contains(note, "Last error"))
	is.True(strings.Contains(note, "make the acceptance criteria concrete"))
}

func TestStuckNoteRecommendations(t *testing.T) {
	tests := []struct {
		line string
		want string
	}{
		{"./calc_test.go:6:5: undefined: Mul", "the error names an undefined identifier (./calc_test.go)"},
		{"ModuleNotFoundError: No module named 'yaml'", "add or install the module the error says is missing, or correct the import"},
		{"open data/seed.json: no such file or directory", "add the file the error says is missing (data/seed.json)"},
		{"panic: boom", "investigate the error by hand"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			is := is.New(t)
			_, d := Policy{MaxStrategyShifts: -1}.Replay([]Outcome{failing(tt.line, true), failing(tt.line, true)})
			is.Equal(d.Tier, TierHardStop)
			is.True(strings.Contains(StuckNote("rt-1", d, nil), "Recommended next action: "+tt.want))
		})
	}
}

func TestStuck(t *testing.T) {
	tests := []struct {
		name          string
		attempts, max int
		s             State
		want          StuckCause
	}{
		{"fresh", 0, 3, State{}, NotStuck},
		{"under the cap", 2, 3, State{Attempts: 2, FingerprintRun: 2}, NotStuck},
		{"at the cap", 3, 3, State{Attempts: 3}, StuckAttemptCap},
		{"over the cap (limit lowered)", 5, 3, State{}, StuckAttemptCap},
		{"counted by the bash loop, never judged", 3, 3, State{}, StuckAttemptCap},
		{"hard stop under the cap", 4, 9, State{Attempts: 4, Stopped: true}, StuckHardStop},
		{"both: the hard stop is named", 3, 3, State{Stopped: true}, StuckHardStop},
		{"no cap", 100, 0, State{}, NotStuck},
		{"no cap, hard stop", 1, 0, State{Stopped: true}, StuckHardStop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(Stuck(tt.attempts, tt.max, tt.s), tt.want)
		})
	}
}

func TestStuckDecision(t *testing.T) {
	fps := []string{"a", "b", "b"}
	hard := Decision{Tier: TierHardStop, Reason: ReasonNoProgress, Count: 2, Attempts: 4}
	tests := []struct {
		name      string
		s         State
		next      Decision
		wantTier  Tier
		want      string // Reason
		wantCount int
	}{
		{"the escalation's own hard stop", State{Stopped: true}, hard, TierHardStop, ReasonNoProgress, 2},
		{"cap first: same error", State{Attempts: 3, LastFingerprint: "b", FingerprintRun: 2, NoProgressRun: 1, Fingerprints: fps},
			Decision{Tier: TierStrategyShift}, TierHardStop, ReasonRepeatedFingerprint, 2},
		{"cap first: no progress runs longer", State{Attempts: 3, LastFingerprint: "b", FingerprintRun: 1, NoProgressRun: 3},
			Decision{}, TierHardStop, ReasonNoProgress, 3},
		{"cap first: no failure line", State{Attempts: 3, NoProgressRun: 3}, Decision{}, TierHardStop, ReasonNoProgress, 3},
		{"cap first: nothing to name", State{Attempts: 3}, Decision{}, TierHardStop, ReasonMaxAttempts, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			d := StuckDecision(tt.s, tt.next, "the error")
			is.Equal(d.Tier, tt.wantTier)
			is.Equal(d.Reason, tt.want)
			is.Equal(d.Count, tt.wantCount)
			if tt.next.Tier != TierHardStop {
				is.Equal(d.Attempts, tt.s.Attempts)
				is.Equal(d.Error, "the error")
				is.Equal(d.Fingerprints, tt.s.Fingerprints)
			}
		})
	}
}
