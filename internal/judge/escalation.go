package judge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/text"
)

// Tier is the escalation level for one issue's next attempt.
type Tier int

// The escalation tiers, in the order they are reached.
const (
	// TierNone: the next prompt is the ordinary one.
	TierNone Tier = iota
	// TierStrategyShift: the next prompt carries a strategy-shift section
	// with the verbatim error and the count, and forbids the failed pattern.
	TierStrategyShift
	// TierContextExpansion: a strategy shift for an error that suggests
	// missing information; the next prompt also carries the files the error
	// points at.
	TierContextExpansion
	// TierHardStop: stop working on the issue, write a STUCK note, add the
	// StuckLabel label and skip it.
	TierHardStop
)

// String returns the tier's name as used in logs.
func (t Tier) String() string {
	switch t {
	case TierNone:
		return "none"
	case TierStrategyShift:
		return "strategy-shift"
	case TierContextExpansion:
		return "context-expansion"
	case TierHardStop:
		return "hard-stop"
	}
	return fmt.Sprintf("tier(%d)", int(t))
}

// Escalation reasons, named as RALF Lite names its stop reasons.
const (
	ReasonRepeatedFingerprint = "repeated_fingerprint"
	ReasonNoProgress          = "no_progress"
)

// StuckLabel is the label a hard stop adds to the issue.
const StuckLabel = "ralph:stuck"

// Defaults for Policy's zero fields.
const (
	DefaultFingerprintRepeats = 2
	DefaultNoProgressRepeats  = 2
	DefaultMaxStrategyShifts  = 2
)

// maxFingerprints bounds State.Fingerprints.
const maxFingerprints = 20

// Policy holds the escalation thresholds. Zero fields take the defaults.
type Policy struct {
	// FingerprintRepeats is error_fingerprint_repeats: escalate once the
	// same fingerprint ends this many attempts in a row (default 2).
	FingerprintRepeats int
	// NoProgressRepeats is no_progress_repeats: escalate once this many
	// attempts in a row made no progress (default 2).
	NoProgressRepeats int
	// MaxStrategyShifts is how many escalated attempts (tier 1 or 2) an
	// issue gets before the hard stop (default 2). Negative means none: the
	// first trigger is a hard stop.
	MaxStrategyShifts int
}

func (p Policy) withDefaults() Policy {
	if p.FingerprintRepeats <= 0 {
		p.FingerprintRepeats = DefaultFingerprintRepeats
	}
	if p.NoProgressRepeats <= 0 {
		p.NoProgressRepeats = DefaultNoProgressRepeats
	}
	switch {
	case p.MaxStrategyShifts == 0:
		p.MaxStrategyShifts = DefaultMaxStrategyShifts
	case p.MaxStrategyShifts < 0:
		p.MaxStrategyShifts = 0
	}
	return p
}

// Outcome is what the escalation needs to know about one finished attempt.
type Outcome struct {
	// Passed is set when every check passed (the attempt succeeded). It
	// ends the episode: the state resets.
	Passed      bool
	Fingerprint string // of ErrorLine, "" when the attempt had no failure line
	ErrorLine   string // verbatim failure line (see ErrorLine)
	Progress    bool   // Verdict.Progress against the previous attempt
}

// State is the per-issue escalation state. The zero value is the state
// before the first attempt. It is plain data, so callers can persist it
// (the JSON tags are stable).
type State struct {
	Attempts        int      `json:"attempts"`
	LastFingerprint string   `json:"last_fingerprint,omitempty"`
	FingerprintRun  int      `json:"fingerprint_run"`   // attempts in a row ending in LastFingerprint
	NoProgressRun   int      `json:"no_progress_run"`   // attempts in a row without progress
	StrategyShifts  int      `json:"strategy_shifts"`   // escalated attempts granted so far
	Fingerprints    []string `json:"fingerprints"`      // per attempt since the last pass, oldest first, at most 20
	Stopped         bool     `json:"stopped,omitempty"` // a hard stop was decided
	StopReason      string   `json:"stop_reason,omitempty"`
}

// StuckCount is the length of the longest current run of failures: same
// fingerprint or no progress, whichever is longer.
func (s State) StuckCount() int {
	return max(s.FingerprintRun, s.NoProgressRun)
}

// Decision says how to run the issue's next attempt, with the data for the
// prompt section or the STUCK note.
type Decision struct {
	Tier   Tier
	Reason string // ReasonRepeatedFingerprint or ReasonNoProgress; "" for TierNone
	// Error is the verbatim failure line of the last attempt ("" if none).
	Error       string
	Fingerprint string
	// Count is how many attempts in a row failed this way.
	Count int
	// Forbidden is the failed pattern the next attempt must not repeat: the
	// normalised error line, dynamic values as placeholders. It is "" when
	// the last attempt had no failure line (a no-progress escalation).
	Forbidden string
	// Shift numbers this escalated attempt, from 1 to MaxShifts, for tiers
	// 1 and 2. For tier 3 it is the number of escalated attempts tried.
	Shift     int
	MaxShifts int
	// Paths are the files the error points at (tier 2 only), as written in
	// the error: resolve them inside the work tree and skip the rest.
	Paths []string
	// Attempts counts the attempts since the last pass.
	Attempts int
	// Fingerprints lists the fingerprint of each attempt, oldest first
	// (tier 3 only, for the STUCK note).
	Fingerprints []string
}

// Next advances the state by one finished attempt and decides the next one.
//
// A passed attempt resets the state. Otherwise the fingerprint run and the
// no-progress run are updated. When the fingerprint run reaches
// FingerprintRepeats, or else the no-progress run reaches NoProgressRepeats,
// the issue escalates: while fewer than MaxStrategyShifts escalated attempts
// were granted it gets another (tier 2 when MissingInfo says the error
// suggests missing information, else tier 1); after that it is a hard stop,
// and stays one until an attempt passes. Granted shifts are not given back
// when the runs reset, so an issue that alternates between two errors still
// reaches the hard stop.
//
// With the defaults, the same error on attempts 1-4 gives: none after 1,
// strategy shift 1 after 2, strategy shift 2 after 3, hard stop after 4.
func (p Policy) Next(s State, o Outcome) (State, Decision) {
	p = p.withDefaults()
	if o.Passed {
		return State{}, Decision{Tier: TierNone, MaxShifts: p.MaxStrategyShifts}
	}
	s.Attempts++
	s.Fingerprints = append(slices.Clone(s.Fingerprints), o.Fingerprint)
	if n := len(s.Fingerprints); n > maxFingerprints {
		s.Fingerprints = s.Fingerprints[n-maxFingerprints:]
	}
	switch {
	case o.Fingerprint == "":
		s.FingerprintRun = 0
	case o.Fingerprint == s.LastFingerprint:
		s.FingerprintRun++
	default:
		s.FingerprintRun = 1
	}
	s.LastFingerprint = o.Fingerprint
	if o.Progress {
		s.NoProgressRun = 0
	} else {
		s.NoProgressRun++
	}

	d := Decision{
		Error:       o.ErrorLine,
		Fingerprint: o.Fingerprint,
		MaxShifts:   p.MaxStrategyShifts,
		Attempts:    s.Attempts,
	}
	switch {
	case s.FingerprintRun >= p.FingerprintRepeats && o.Fingerprint != "":
		d.Reason, d.Count = ReasonRepeatedFingerprint, s.FingerprintRun
	case s.NoProgressRun >= p.NoProgressRepeats:
		d.Reason, d.Count = ReasonNoProgress, s.NoProgressRun
	}
	if d.Reason == "" && !s.Stopped {
		return s, Decision{Tier: TierNone, MaxShifts: p.MaxStrategyShifts, Attempts: s.Attempts}
	}
	if o.ErrorLine != "" {
		d.Forbidden = Normalize(o.ErrorLine)
	}
	if s.Stopped || s.StrategyShifts >= p.MaxStrategyShifts {
		if !s.Stopped {
			s.Stopped, s.StopReason = true, d.Reason
		}
		d.Tier = TierHardStop
		d.Reason = s.StopReason
		d.Shift = s.StrategyShifts
		d.Fingerprints = slices.Clone(s.Fingerprints)
		return s, d
	}
	s.StrategyShifts++
	d.Shift = s.StrategyShifts
	d.Tier = TierStrategyShift
	if missing, paths := MissingInfo(o.ErrorLine); missing {
		d.Tier = TierContextExpansion
		d.Paths = paths
	}
	return s, d
}

// StuckCause says why BUILD gives up on an issue; NotStuck when it does not.
type StuckCause string

// The causes Stuck decides, as `ralphd status --json` reports them.
const (
	NotStuck StuckCause = ""
	// StuckHardStop: the escalation gave up on the issue (State.Stopped).
	StuckHardStop StuckCause = "hard_stop"
	// StuckAttemptCap: the issue's attempts reached the cap (max_stuck).
	StuckAttemptCap StuckCause = "attempt_cap"
)

// ReasonMaxAttempts is the STUCK note's reason when the attempt cap came
// first and the failures had no run to name.
const ReasonMaxAttempts = "max_attempts"

// Stuck is the one decision that BUILD gives up on an issue, and why. Both
// triggers meet here: the escalation's hard stop (s.Stopped), and the
// attempt counter reaching maxAttempts (a cap of 0 or less is none). The
// hard stop is named when both hold, as it says more.
func Stuck(attempts, maxAttempts int, s State) StuckCause {
	switch {
	case s.Stopped:
		return StuckHardStop
	case maxAttempts > 0 && attempts >= maxAttempts:
		return StuckAttemptCap
	}
	return NotStuck
}

// StuckDecision describes a stuck issue's failures for its STUCK note
// (StuckNote): next itself when the escalation decided the hard stop, else
// the hard stop it describes from s, naming the longer current run of
// failures (the attempt cap came first). lastError is the verbatim failure
// line of the last attempt.
func StuckDecision(s State, next Decision, lastError string) Decision {
	if next.Tier == TierHardStop {
		return next
	}
	d := Decision{
		Tier: TierHardStop, Error: lastError, Fingerprint: s.LastFingerprint,
		Shift: s.StrategyShifts, Attempts: s.Attempts, Fingerprints: slices.Clone(s.Fingerprints),
	}
	switch {
	case s.LastFingerprint != "" && s.FingerprintRun >= s.NoProgressRun:
		d.Reason, d.Count = ReasonRepeatedFingerprint, s.FingerprintRun
	case s.NoProgressRun > 0:
		d.Reason, d.Count = ReasonNoProgress, s.NoProgressRun
	default:
		d.Reason = ReasonMaxAttempts
	}
	return d
}

// The kinds of missing information MissingInfo recognises.
const (
	missingNone = iota
	missingFile
	missingModule
	missingName
)

var (
	missingFileRe   = text.LazyRegexp(`(?i)no such file or directory|file not found|cannot find the (file|path)|\bENOENT\b|FileNotFoundError|could not open file|can't open file|cannot open (source )?file|does not exist: `)
	missingModuleRe = text.LazyRegexp(`(?i)ModuleNotFoundError|\bImportError\b|No module named|Cannot find module|cannot find package|no required module provides package|is not in std|could not import|unresolved import|failed to resolve|module not found|can't find crate|\bE04(32|33)\b|\bTS2307\b|cannot import name`)
	missingNameRe   = text.LazyRegexp(`(?i)\bundefined: |\bNameError\b|\bReferenceError\b|is not defined\b|cannot find (value|function|type|macro|struct|trait|name|symbol)\b|\bE04(12|25)\b|\bTS2304\b|undefined reference to|undeclared (name|identifier)|not declared in this scope|uninitialized constant|undefined (method|variable|function|name|symbol|constant)|module '[^']*' has no attribute`)

	fileRefRe = text.LazyRegexp(`(?:^|[\s'"(\x60])((?:\.{1,2}/|/|~/)?[\w@.+-][\w@.+/-]*\.[A-Za-z]\w*)(?::\d+|\(\d+,\d+\))`)
	quotedRe  = text.LazyRegexp("'([^'\\s]+)'|\"([^\"\\s]+)\"|`([^`\\s]+)`")
	openRe    = text.LazyRegexp(`(?:open|stat|lstat|read|access) ([^\s:'"]+): `)
	extRe     = text.LazyRegexp(`\.([A-Za-z0-9]{1,6})$`)
)

// sourceExts are the file extensions a bare name needs to count as a file.
var sourceExts = map[string]bool{
	"go": true, "mod": true, "sum": true, "py": true, "pyi": true, "js": true, "mjs": true, "cjs": true,
	"jsx": true, "ts": true, "tsx": true, "mts": true, "cts": true, "vue": true, "svelte": true,
	"rs": true, "rb": true, "java": true, "kt": true, "scala": true, "c": true, "h": true,
	"cc": true, "cpp": true, "hpp": true, "cs": true, "swift": true, "php": true, "ex": true,
	"exs": true, "erl": true, "hs": true, "ml": true, "lua": true, "dart": true, "zig": true,
	"sh": true, "bash": true, "sql": true, "proto": true, "json": true, "yaml": true, "yml": true,
	"toml": true, "ini": true, "cfg": true, "conf": true, "env": true, "xml": true, "html": true,
	"css": true, "scss": true, "md": true, "txt": true, "csv": true, "lock": true, "tf": true,
	"gradle": true,
}

// MissingInfo reports whether a failure line suggests that the agent lacked
// information: a file that was not found, an import or module that could
// not be resolved, or an undefined name. When it does, it also returns the
// files the line points at, in order, without duplicates: `path:line`
// references, paths in `open PATH: ...`, and quoted strings that look like
// paths (they start with ./, ../, / or ~/, or contain a slash, or end in a
// known source extension). A slash-separated name whose first element
// contains a dot, like github.com/x/y, is an import path, not a file, and
// is left out.
func MissingInfo(line string) (bool, []string) {
	if missingKind(line) == missingNone {
		return false, nil
	}
	var paths []string
	seen := map[string]bool{}
	add := func(p string) {
		p = strings.TrimRight(p, ".,;:")
		if p == "" || seen[p] || !looksLikePath(p) {
			return
		}
		seen[p] = true
		paths = append(paths, p)
	}
	for _, m := range fileRefRe.FindAllStringSubmatch(line, -1) {
		add(m[1])
	}
	for _, m := range openRe.FindAllStringSubmatch(line, -1) {
		add(m[1])
	}
	for _, m := range quotedRe.FindAllStringSubmatch(line, -1) {
		add(m[1] + m[2] + m[3])
	}
	return true, paths
}

func missingKind(line string) int {
	switch {
	case missingFileRe.MatchString(line):
		return missingFile
	case missingModuleRe.MatchString(line):
		return missingModule
	case missingNameRe.MatchString(line):
		return missingName
	}
	return missingNone
}

func looksLikePath(p string) bool {
	if strings.Contains(p, "://") || strings.ContainsAny(p, "<>|*?") {
		return false
	}
	if strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "~/") {
		return true
	}
	if strings.HasPrefix(p, "/") {
		return len(p) > 1
	}
	if first, _, ok := strings.Cut(p, "/"); ok {
		return !strings.Contains(first, ".") && first != ""
	}
	m := extRe.FindStringSubmatch(p)
	return m != nil && sourceExts[strings.ToLower(m[1])]
}

// StuckNote renders the note a hard stop writes on the issue: the reason,
// the fingerprint of each attempt, the verbatim last error, what ralphd
// fixed automatically along the way (autoFixed, may be empty), and a
// recommended next action. It starts with "STUCK:".
func StuckNote(issue string, d Decision, autoFixed []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "STUCK: ralphd stopped working on %s after %s", issue, text.Count(d.Attempts, "attempt"))
	switch {
	case d.Count == 0:
	case d.Reason == ReasonRepeatedFingerprint:
		fmt.Fprintf(&b, ": the same error %s in a row", text.Count(d.Count, "time"))
	case d.Reason == ReasonNoProgress:
		fmt.Fprintf(&b, ": no progress %s in a row", text.Count(d.Count, "time"))
	}
	fmt.Fprintf(&b, ", after %d strategy shifts (reason: %s).\n", d.Shift, d.Reason)
	if len(d.Fingerprints) > 0 {
		b.WriteString("Fingerprints per attempt:")
		for i, f := range d.Fingerprints {
			if f == "" {
				f = "none"
			}
			fmt.Fprintf(&b, " %d=%s", i+1, f)
		}
		b.WriteString("\n")
	}
	if d.Error != "" {
		fmt.Fprintf(&b, "Last error (verbatim): %s\n", d.Error)
	}
	if len(autoFixed) == 0 {
		b.WriteString("Auto-fixed: nothing.\n")
	} else {
		fmt.Fprintf(&b, "Auto-fixed: %s.\n", strings.Join(autoFixed, "; "))
	}
	fmt.Fprintf(&b, "Recommended next action: %s Then run `ralphd reset %s` (or let PLANNING remove the %s label) so ralphd starts the issue afresh.",
		recommend(d), issue, StuckLabel)
	return b.String()
}

func recommend(d Decision) string {
	_, paths := MissingInfo(d.Error)
	where := ""
	if len(paths) > 0 {
		where = " (" + strings.Join(paths, ", ") + ")"
	}
	switch missingKind(d.Error) {
	case missingFile:
		return "add the file the error says is missing" + where + ", or correct the path in the issue."
	case missingModule:
		return "add or install the module the error says is missing" + where + ", or correct the import in the issue."
	case missingName:
		return "the error names an undefined identifier" + where + "; say in the issue where it should come from, or split the work so it is defined first."
	}
	if d.Reason == ReasonNoProgress {
		return "the agent changed nothing useful; make the acceptance criteria concrete or split the issue into smaller ones (PLANNING mode)."
	}
	return "investigate the error by hand, or split the issue into smaller ones (PLANNING mode)."
}
