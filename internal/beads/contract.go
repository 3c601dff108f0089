package beads

// The bd contract: every bd command, output shape and exit code ralphd
// relies on, as one table. `ralphd doctor --bd` runs it against the
// user's bd (CheckContract, contract_check.go). The stand-in's conformance
// tests run the same table against the stand-in, and check each case's
// expectation against the recorded bd 1.0.5 run the case names
// (ContractCase.Fixture), so the stand-in, the recordings and the check
// cannot drift apart. The argv of each case is built by the same functions
// the Client uses (readyArgs, claimArgs, ...): the contract checks what
// ralphd sends.

import "time"

// ContractStep is one bd run of the contract.
type ContractStep struct {
	// Args is bd's argv without the program name. "{name}" is replaced by
	// the id bound to name by an earlier step, or by an actor
	// ("{actor1}", "{actor2}") or "{missing}", an id no issue has.
	Args []string
	// Actor, when set ("actor1" or "actor2"), runs the step as that actor:
	// --actor first, as the Client passes it.
	Actor string
	// Where is "" for the scratch repository, or Uninitialized.
	Where string
	// Bind, when set, names the issue the step printed (one issue, as
	// create --json prints it) for later steps.
	Bind string
}

// Uninitialized is a ContractStep.Where: a git repository in which bd
// init was never run.
const Uninitialized = "uninitialized"

// Shape is how a step's stdout must parse, with ralphd's own parser.
type Shape int

// The shapes ralphd parses.
const (
	NoShape       Shape = iota // stdout is not read
	IssuesShape                // ParseIssues: an array of issues
	IssueShape                 // ParseIssue: one issue object (create)
	CommentsShape              // ParseComments
	StatsShape                 // ParseStats
	VersionShape               // ParseVersion, of plain text
	ExportShape                // ParseExport: JSON lines of issues
)

// String names the parser.
func (s Shape) String() string {
	return [...]string{"nothing", "an issue list", "an issue", "a comment list", "stats", "a version line", "an export"}[s]
}

// Expect is what a case checks. Values may hold "{name}" like Args.
type Expect struct {
	// Fails: bd must exit non-zero, which is all ralphd reads of a failure's
	// code; otherwise it must exit 0.
	Fails bool
	// Shape is how stdout must parse (only read on exit 0).
	Shape Shape
	// IDs, when not nil, are the ids of the issues printed, in order.
	IDs []string
	// Has and Lacks are ids that must be, or must not be, among them.
	Has, Lacks []string
	// Fields are bd's JSON names and the values ralphd must read: of the
	// issue Of, or of the one issue printed when Of is empty. "<set>"
	// means any non-empty value, "<suffix>x" any value ending in x. Lists (labels, dependencies as
	// "type:id") are sorted and joined with ",".
	Of     string
	Fields map[string]string
	// HasComment is the text of a comment that must be among those
	// printed.
	HasComment string
	// Stdout and Stderr are regular expressions the streams must match.
	Stdout, Stderr string
	// NotFound: ralphd must read the failure as an unknown id
	// (ErrIssueNotFound); NotInitialized: as no tracker here.
	NotFound, NotInitialized bool
	// Refusal: ralphd must read the failure as this claim refusal, held
	// by Holder when set.
	Refusal RefusalKind
	Holder  string
}

// ContractCase is one thing ralphd relies on bd to do.
type ContractCase struct {
	Name string
	// Why says what ralphd relies on it for.
	Why string
	// Setup runs first; each step must exit 0, and is not otherwise
	// checked.
	Setup []ContractStep
	// Run is the bd call under test.
	Run ContractStep
	// Racers, instead of Run, are claims run at once: exactly one must
	// win (exit 0, the issue in_progress and assigned to its actor) and
	// every other must fail with a claim refusal ralphd reads as a lost
	// race.
	Racers []ContractStep
	Want   Expect
	// Tolerated, when set, makes a difference a warning, not a failure:
	// ralphd copes with it, and this says how.
	Tolerated string
	// Gate: when this case fails, the cases after it are not run (bd
	// init).
	Gate bool
	// Fixture names the recorded bd 1.0.5 run of this case (a file of the
	// stand-in's testdata/contract, without ".txt"), and FixtureVars what
	// "{name}" stood for in it.
	Fixture     string
	FixtureVars map[string]string
}

// Names the contract binds; ContractCases uses them, and the check fills
// in the actors and the missing id.
const (
	actor1 = "actor1"
	actor2 = "actor2"
)

// notesTolerated is why a difference in how `--notes` replaces notes does
// not stop ralphd.
const notesTolerated = "SetNotes then clears the notes (--notes \"\", else --clear-notes) and appends " +
	"(from bd's changelog, not verified against that version)"

// ContractCases returns the contract, in the order the check runs it: the
// cases share one scratch tracker, each building on the ones before it.
// Their data follows the recorded runs, so that a case's Fields hold for
// its recording too.
func ContractCases() []ContractCase {
	p0, p1 := 0, 1
	update := func(sets ...Set) []string { return jsonArgs(updateArgs("{A}", sets...)) }
	return []ContractCase{
		{
			Name: "version", Why: "ralphd reads the version at run start",
			Run:  ContractStep{Args: []string{"version"}},
			Want: Expect{Shape: VersionShape, Stdout: `^bd version `}, Fixture: "version",
		},
		{
			Name: "no tracker: ready fails", Why: "ralphd tells the user to run bd init",
			Run:     ContractStep{Where: Uninitialized, Args: jsonArgs(readyArgs(ReadyOptions{}))},
			Want:    Expect{Fails: true, NotInitialized: true},
			Fixture: "err-not-initialized-ready",
		},
		{
			Name: "init", Why: "the scratch tracker of this check; the demo's project",
			Run:  ContractStep{Args: []string{"init", "--prefix", "rc", "--non-interactive", "--skip-agents", "--skip-hooks", "--quiet"}},
			Gate: true, Fixture: "init-quiet",
		},
		{
			Name: "ready --claim with nothing to claim", Why: "a worker parks: exit 0 and no issue, not an error",
			Run:     ContractStep{Actor: actor1, Args: jsonArgs(readyClaimArgs(ClaimFilter{}))},
			Want:    Expect{Shape: IssuesShape, IDs: []string{}},
			Fixture: "ready-claim-none-json",
		},
		{
			Name: "ready with no issues", Why: "BUILD ends when nothing is ready",
			Run:     ContractStep{Args: jsonArgs(readyArgs(ReadyOptions{}))},
			Want:    Expect{Shape: IssuesShape, IDs: []string{}},
			Fixture: "ready-empty",
		},
		{
			Name: "create", Why: "the guard re-creates a deleted issue with every field",
			Run: ContractStep{Bind: "A", Args: jsonArgs(createArgs(CreateOptions{
				Title: "Implement config parser", Description: "Parse the YAML config file into a struct.",
				Type: "feature", Priority: &p1, Acceptance: "Unit tests cover all keys; invalid YAML returns error",
				Notes: "initial note", Labels: []string{"backend", "parser"},
			}))},
			Want: Expect{Shape: IssueShape, Fields: map[string]string{
				"title": "Implement config parser", "description": "Parse the YAML config file into a struct.",
				"issue_type": "feature", "priority": "1", "status": StatusOpen, "notes": "initial note",
				"acceptance_criteria": "Unit tests cover all keys; invalid YAML returns error", "labels": "backend,parser",
			}},
			Fixture: "create-full-json",
		},
		{
			Name: "show", Why: "ralphd reads an issue back: claims, judgements, the guard's snapshots",
			Run: ContractStep{Args: jsonArgs([]string{"show", "{A}"})},
			Want: Expect{Shape: IssuesShape, IDs: []string{"{A}"}, Fields: map[string]string{
				"title": "Implement config parser", "issue_type": "feature", "priority": "1", "status": StatusOpen,
				"notes": "initial note", "acceptance_criteria": "Unit tests cover all keys; invalid YAML returns error",
				"labels": "backend,parser",
			}},
			Fixture: "show-json", FixtureVars: map[string]string{"A": "rt-cjz"},
		},
		{
			Name: "show of an unknown id fails", Why: "ralphd reads it as a deleted issue",
			Run:     ContractStep{Args: jsonArgs([]string{"show", "{missing}"})},
			Want:    Expect{Fails: true, NotFound: true},
			Fixture: "err-unknown-id-show-json", FixtureVars: map[string]string{"missing": "rt-zzz"},
		},
		{
			Name: "update of an unknown id fails", Why: "ralphd reads it as a deleted issue",
			Run:     ContractStep{Args: jsonArgs(statusArgs("{missing}", StatusInProgress))},
			Want:    Expect{Fails: true, NotFound: true},
			Fixture: "err-unknown-id-update-json", FixtureVars: map[string]string{"missing": "rt-zzz"},
		},
		{
			Name: "create a P0 bug", Why: "the ready order below",
			Run:     ContractStep{Bind: "B", Args: jsonArgs(createArgs(CreateOptions{Title: "Crash on empty input", Priority: &p0, Type: "bug"}))},
			Want:    Expect{Shape: IssueShape, Fields: map[string]string{"priority": "0", "issue_type": "bug"}},
			Fixture: "create-bug-p0-json",
		},
		{
			Name: "ready, in priority order", Why: "BUILD takes the first ready issue, in bd's order",
			Run:  ContractStep{Args: jsonArgs(readyArgs(ReadyOptions{}))},
			Want: Expect{Shape: IssuesShape, IDs: []string{"{B}", "{A}"}},
		},
		{
			Name: "update --status blocked", Why: "the guard restores a status",
			Run:     ContractStep{Args: jsonArgs(statusArgs("{B}", StatusBlocked))},
			Want:    Expect{Shape: IssuesShape, IDs: []string{"{B}"}, Fields: map[string]string{"status": StatusBlocked}},
			Fixture: "update-status-blocked-json", FixtureVars: map[string]string{"B": "rt-hz0"},
		},
		{
			Name: "a blocked issue is not ready", Why: "BUILD never takes one",
			Run:  ContractStep{Args: jsonArgs(readyArgs(ReadyOptions{}))},
			Want: Expect{Shape: IssuesShape, IDs: []string{"{A}"}},
		},
		{
			Name: "update --status open", Why: "the guard restores a status; ralphd puts work back",
			Run:     ContractStep{Args: jsonArgs(statusArgs("{B}", StatusOpen))},
			Want:    Expect{Shape: IssuesShape, IDs: []string{"{B}"}, Fields: map[string]string{"status": StatusOpen}},
			Fixture: "update-status-open-json", FixtureVars: map[string]string{"B": "rt-hz0"},
		},
		{
			Name: "update --priority", Why: "the guard restores a priority",
			Run:     ContractStep{Args: update(Set{"priority", "0"})},
			Want:    Expect{Shape: IssuesShape, IDs: []string{"{A}"}, Fields: map[string]string{"priority": "0"}},
			Fixture: "update-priority-json", FixtureVars: map[string]string{"A": "rt-2j9"},
		},
		{
			Name: "update --type", Why: "the guard restores a type",
			Run:     ContractStep{Args: update(Set{"type", "task"})},
			Want:    Expect{Shape: IssuesShape, IDs: []string{"{A}"}, Fields: map[string]string{"issue_type": "task"}},
			Fixture: "update-type-json", FixtureVars: map[string]string{"A": "rt-hz0"},
		},
		{
			Name: "update --acceptance", Why: "the guard restores the acceptance criteria",
			Run:     ContractStep{Args: update(Set{"acceptance", "CI runs go test on every push"})},
			Want:    Expect{Shape: IssuesShape, Fields: map[string]string{"acceptance_criteria": "CI runs go test on every push"}},
			Fixture: "update-acceptance-json",
		},
		{
			Name: "update --title --description", Why: "the guard restores a title and a description",
			Run: ContractStep{Args: update(Set{"title", "Write user guide"}, Set{"description", "Write the user guide."})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{
				"title": "Write user guide", "description": "Write the user guide.",
			}},
			Fixture: "update-description-title-json",
		},
		{
			Name: "update --design", Why: "the guard restores a design",
			Run:  ContractStep{Args: update(Set{"design", "Design text"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"design": "Design text"}},
		},
		{
			Name: "update --external-ref", Why: "the guard restores an external ref",
			Run:  ContractStep{Args: update(Set{"external-ref", "gh-42"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"external_ref": "gh-42"}},
		},
		{
			Name: "update --external-ref \"\"", Why: "the guard clears an external ref",
			Run:  ContractStep{Args: update(Set{"external-ref", ""})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"external_ref": ""}},
		},
		{
			Name: "update --estimate", Why: "the guard restores an estimate",
			Run:  ContractStep{Args: update(Set{"estimate", "30"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"estimated_minutes": "30"}},
		},
		{
			Name: "update --spec-id", Why: "the guard restores a spec id",
			Run:  ContractStep{Args: update(Set{"spec-id", "SPEC-9"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"spec_id": "SPEC-9"}},
		},
		{
			Name: "update --spec-id \"\"", Why: "the guard clears a spec id",
			Run:  ContractStep{Args: update(Set{"spec-id", ""})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"spec_id": ""}},
		},
		{
			Name: "update --due", Why: "the guard restores a due date",
			Run:  ContractStep{Args: update(Set{"due", "2099-01-02T03:04:05Z"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"due_at": "<set>"}},
		},
		{
			Name: "update --due \"\"", Why: "the guard clears a due date",
			Run:  ContractStep{Args: update(Set{"due", ""})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"due_at": ""}},
		},
		{
			Name: "update --defer", Why: "the guard restores a defer date",
			Run:  ContractStep{Args: update(Set{"defer", "2099-01-02T03:04:05Z"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"defer_until": "<set>"}},
		},
		{
			Name: "update --defer \"\"", Why: "the guard clears a defer date",
			Run:  ContractStep{Args: update(Set{"defer", ""})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"defer_until": ""}},
		},
		{
			Name: "update --parent", Why: "the guard restores a parent",
			Setup: []ContractStep{{Bind: "E", Args: jsonArgs(createArgs(CreateOptions{Title: "Release 1.0", Type: "epic", Priority: &p1}))}},
			Run:   ContractStep{Args: update(Set{"parent", "{E}"})},
			Want:  Expect{Shape: IssuesShape, IDs: []string{"{A}"}},
		},
		{
			Name: "show reads the parent", Why: "the guard's snapshots",
			Run:  ContractStep{Args: jsonArgs([]string{"show", "{A}"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"parent": "{E}", "dependencies": "parent-child:{E}"}},
		},
		{
			Name: "ready --parent", Why: "scope: only an epic's children",
			Run:  ContractStep{Args: jsonArgs(readyArgs(ReadyOptions{Parent: "{E}"}))},
			Want: Expect{Shape: IssuesShape, IDs: []string{"{A}"}},
		},
		{
			Name: "update --parent \"\"", Why: "the guard removes a parent",
			Run:  ContractStep{Args: update(Set{"parent", ""})},
			Want: Expect{Shape: IssuesShape, IDs: []string{"{A}"}},
		},
		{
			Name: "show after the parent is removed", Why: "the guard's snapshots",
			Run:  ContractStep{Args: jsonArgs([]string{"show", "{A}"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"parent": "", "dependencies": ""}},
		},
		{
			Name: "update --notes over notes", Why: "restoring notes",
			Run:       ContractStep{Args: jsonArgs(setNotesArgs("{A}", "second notes text"))},
			Want:      Expect{Shape: IssuesShape, Fields: map[string]string{"notes": "second notes text"}},
			Tolerated: notesTolerated,
			Fixture:   "update-notes-2",
		},
		{
			Name: "update --append-notes", Why: "every note ralphd leaves (STUCK, reverts, failures) is appended",
			Run:     ContractStep{Args: jsonArgs(appendNotesArgs("{A}", "appended line"))},
			Want:    Expect{Shape: IssuesShape, Fields: map[string]string{"notes": "<suffix>\nappended line"}},
			Fixture: "update-append-notes",
		},
		{
			Name: "update --notes \"\"", Why: "restoring empty notes",
			Run:       ContractStep{Args: jsonArgs(setNotesArgs("{A}", ""))},
			Want:      Expect{Shape: IssuesShape, Fields: map[string]string{"notes": ""}},
			Tolerated: notesTolerated,
		},
		{
			Name: "update --claim", Why: "a worker claims its issue",
			Run: ContractStep{Actor: actor1, Args: jsonArgs(claimArgs("{A}"))},
			Want: Expect{Shape: IssuesShape, IDs: []string{"{A}"}, Fields: map[string]string{
				"status": StatusInProgress, "assignee": "{actor1}", "started_at": "<set>",
			}},
			Fixture: "update-claim-json", FixtureVars: map[string]string{"A": "rt-wjd.1", "actor1": "Test User"},
		},
		{
			Name: "update --claim again by the holder", Why: "a claim read back after a retry",
			Run: ContractStep{Actor: actor1, Args: jsonArgs(claimArgs("{A}"))},
			Want: Expect{Shape: IssuesShape, IDs: []string{"{A}"}, Fields: map[string]string{
				"status": StatusInProgress, "assignee": "{actor1}",
			}},
			Fixture: "update-claim-again-same-actor-json", FixtureVars: map[string]string{"A": "rt-wjd.1", "actor1": "Test User"},
		},
		{
			Name: "update --claim by a second actor", Why: "a lost claim is a lost race, not an error",
			Run:     ContractStep{Actor: actor2, Args: jsonArgs(claimArgs("{A}"))},
			Want:    Expect{Fails: true, Refusal: AlreadyClaimed, Holder: "{actor1}"},
			Fixture: "update-claim-other-actor-json", FixtureVars: map[string]string{"A": "rt-wjd.1", "actor1": "Test User"},
		},
		{
			Name: "show after a claim", Why: "the claim's read-back",
			Run: ContractStep{Args: jsonArgs([]string{"show", "{A}"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{
				"status": StatusInProgress, "assignee": "{actor1}", "started_at": "<set>",
			}},
		},
		{
			Name: "release by another actor", Why: "ralphd gives a claim back (update --status open --assignee \"\")",
			Run:     ContractStep{Actor: actor2, Args: jsonArgs(releaseArgs("{A}"))},
			Want:    Expect{Shape: IssuesShape, IDs: []string{"{A}"}, Fields: map[string]string{"status": StatusOpen, "assignee": ""}},
			Fixture: "claim-unclaim-by-other-actor-json", FixtureVars: map[string]string{"A": "wt-sgc"},
		},
		{
			Name: "two actors race to claim", Why: "workers claim at once: one wins, the other loses cleanly",
			Setup:  []ContractStep{{Bind: "R", Args: jsonArgs(createArgs(CreateOptions{Title: "Claim race target", Priority: &p0}))}},
			Racers: []ContractStep{{Actor: actor1, Args: jsonArgs(claimArgs("{R}"))}, {Actor: actor2, Args: jsonArgs(claimArgs("{R}"))}},
		},
		{
			Name: "ready --claim --exclude-label", Why: "workers pass over stuck issues",
			Setup: []ContractStep{
				{Bind: "S", Args: jsonArgs(createArgs(CreateOptions{Title: "Stuck one", Priority: &p0, Labels: []string{"ralph:stuck"}}))},
			},
			Run: ContractStep{Bind: "C", Actor: actor2, Args: jsonArgs(readyClaimArgs(ClaimFilter{ExcludeLabels: []string{"ralph:stuck"}}))},
			Want: Expect{Shape: IssuesShape, Lacks: []string{"{S}"}, Fields: map[string]string{
				"status": StatusInProgress, "assignee": "{actor2}",
			}},
		},
		{
			Name: "ready --claim", Why: "a worker claims the first ready issue",
			Run: ContractStep{Bind: "D", Actor: actor2, Args: jsonArgs(readyClaimArgs(ClaimFilter{}))},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{
				"status": StatusInProgress, "assignee": "{actor2}",
			}},
			Fixture: "ready-claim-json", FixtureVars: map[string]string{"actor2": "agent-1"},
		},
		{
			Name: "list --status in_progress", Why: "ralphd finds the claims a crash left",
			Run:  ContractStep{Args: jsonArgs(listArgs(ListOptions{Status: StatusInProgress}))},
			Want: Expect{Shape: IssuesShape, Has: []string{"{R}", "{C}", "{D}"}},
		},
		{
			Name: "list --status open,in_progress", Why: "ralphd finds the claims a stopped run left, and those left on reopened issues",
			Run:  ContractStep{Args: jsonArgs(listArgs(ListOptions{Status: StatusOpen + "," + StatusInProgress}))},
			Want: Expect{Shape: IssuesShape, Has: []string{"{R}", "{C}", "{D}", "{B}"}},
		},
		{
			Name: "ready --claim --exclude-type epic", Why: "workers pass over the epics that wait on their children",
			Setup: []ContractStep{
				{Bind: "W", Args: jsonArgs(createArgs(CreateOptions{Title: "Waiting epic", Type: "epic", Priority: &p0}))},
				{Bind: "K", Args: jsonArgs(createArgs(CreateOptions{Title: "Its child", Parent: "{W}", Priority: &p1}))},
			},
			Run: ContractStep{Bind: "X", Actor: actor2, Args: jsonArgs(readyClaimArgs(ClaimFilter{ExcludeTypes: []string{TypeEpic}}))},
			Want: Expect{Shape: IssuesShape, Lacks: []string{"{W}", "{E}"}, Fields: map[string]string{
				"status": StatusInProgress, "assignee": "{actor2}",
			}},
		},
		{
			Name: "close --reason", Why: "the guard closes again; BUILD's closes are read",
			Setup: []ContractStep{
				{Actor: actor1, Args: jsonArgs(releaseArgs("{C}"))},
				{Actor: actor1, Args: jsonArgs(releaseArgs("{D}"))},
				{Actor: actor1, Args: jsonArgs(releaseArgs("{X}"))},
			},
			Run: ContractStep{Args: jsonArgs(closeArgs("{A}", "Implemented in commit abc123"))},
			Want: Expect{Shape: IssuesShape, IDs: []string{"{A}"}, Fields: map[string]string{
				"status": StatusClosed, "close_reason": "Implemented in commit abc123", "closed_at": "<set>",
			}},
			Fixture: "close-json", FixtureVars: map[string]string{"A": "rt-cjz"},
		},
		{
			Name: "list --all", Why: "ralphd's snapshots of the whole tracker, closed issues included",
			Run:  ContractStep{Args: jsonArgs(listArgs(ListOptions{All: true}))},
			Want: Expect{Shape: IssuesShape, Has: []string{"{A}", "{B}", "{E}", "{R}", "{S}"}, Of: "{A}", Fields: map[string]string{"status": StatusClosed}},
		},
		{
			Name: "list --all --id", Why: "tracker_reads = incremental re-reads by id the issues ralphd wrote (a label moves no updated_at)",
			Run:  ContractStep{Args: jsonArgs(listArgs(ListOptions{All: true, IDs: []string{"{A}", "{B}"}}))},
			Want: Expect{Shape: IssuesShape, Has: []string{"{A}", "{B}"}, Lacks: []string{"{E}", "{R}"}},
		},
		{
			Name: "list --all --updated-after", Why: "tracker_reads = incremental reads only the issues changed since its last read",
			Run:  ContractStep{Args: jsonArgs(listArgs(ListOptions{All: true, UpdatedAfter: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}))},
			Want: Expect{Shape: IssuesShape, Has: []string{"{A}", "{B}", "{E}", "{R}", "{S}"}},
		},
		{
			Name: "list --all --updated-after (future)", Why: "an issue not changed since the cut is left out",
			Run:  ContractStep{Args: jsonArgs(listArgs(ListOptions{All: true, UpdatedAfter: time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)}))},
			Want: Expect{Shape: IssuesShape, Lacks: []string{"{A}", "{B}", "{E}", "{R}", "{S}"}},
		},
		{
			Name: "reopen --reason", Why: "the guard reopens a close without evidence",
			Run: ContractStep{Args: jsonArgs(reopenArgs("{A}", "regression found"))},
			Want: Expect{Shape: IssuesShape, IDs: []string{"{A}"}, Fields: map[string]string{
				"status": StatusOpen, "close_reason": "", "closed_at": "",
			}},
			Fixture: "reopen-json", FixtureVars: map[string]string{"A": "rt-cjz"},
		},
		{
			Name: "reopen of an open issue", Why: "a reopen that raced another succeeds",
			Run:     ContractStep{Args: jsonArgs(reopenArgs("{A}", ""))},
			Fixture: "reopen-not-closed",
		},
		{
			Name: "dep add", Why: "the guard restores a dependency",
			Run:     ContractStep{Args: jsonArgs(depAddArgs("{A}", "{B}", ""))},
			Fixture: "dep-add-json",
		},
		{
			Name: "show reads the dependency", Why: "the guard's snapshots; blockers",
			Run:  ContractStep{Args: jsonArgs([]string{"show", "{A}"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"dependencies": "blocks:{B}"}},
		},
		{
			Name: "list reads the dependency", Why: "the guard's snapshots (list prints raw edges)",
			Run:  ContractStep{Args: jsonArgs(listArgs(ListOptions{All: true}))},
			Want: Expect{Shape: IssuesShape, Of: "{A}", Fields: map[string]string{"dependencies": "blocks:{B}"}},
		},
		{
			Name: "dep list", Why: "the issues another depends on",
			Run:     ContractStep{Args: jsonArgs([]string{"dep", "list", "{A}"})},
			Want:    Expect{Shape: IssuesShape, IDs: []string{"{B}"}},
			Fixture: "dep-list-json", FixtureVars: map[string]string{"B": "rt-cjz"},
		},
		{
			Name: "an issue with an open blocker is not ready", Why: "BUILD never takes one",
			Run:  ContractStep{Args: jsonArgs(readyArgs(ReadyOptions{}))},
			Want: Expect{Shape: IssuesShape, Has: []string{"{B}"}, Lacks: []string{"{A}"}},
		},
		{
			Name: "close of an issue with an open blocker fails", Why: "ralphd's closes respect blockers",
			Run:     ContractStep{Args: jsonArgs(closeArgs("{A}", "blocked but closing"))},
			Want:    Expect{Fails: true},
			Fixture: "close-blocked-issue-json",
		},
		{
			Name: "dep remove", Why: "the guard undoes a dependency",
			Run:     ContractStep{Args: jsonArgs(depRemoveArgs("{A}", "{B}"))},
			Fixture: "dep-remove",
		},
		{
			Name: "dep add --type related", Why: "the guard restores a dependency of any type",
			Run:     ContractStep{Args: jsonArgs(depAddArgs("{B}", "{A}", "related"))},
			Fixture: "dep-add-related-json",
		},
		{
			Name: "label add", Why: "the guard restores a label; STUCK issues get ralph:stuck",
			Run:     ContractStep{Args: jsonArgs(labelArgs("add", "{B}", "ci"))},
			Fixture: "label-add-json",
		},
		{
			Name: "show reads the label", Why: "labels in snapshots",
			Run:  ContractStep{Args: jsonArgs([]string{"show", "{B}"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"labels": "ci"}},
		},
		{
			Name: "label remove", Why: "the guard removes a reserved label",
			Run: ContractStep{Args: jsonArgs(labelArgs("remove", "{B}", "ci"))},
		},
		{
			Name: "show after label remove", Why: "labels in snapshots",
			Run:  ContractStep{Args: jsonArgs([]string{"show", "{B}"})},
			Want: Expect{Shape: IssuesShape, Fields: map[string]string{"labels": ""}},
		},
		{
			Name: "comments add", Why: "the guard restores a removed comment",
			Run:     ContractStep{Actor: actor1, Args: jsonArgs(commentAddArgs("{B}", "Second comment"))},
			Fixture: "comments-add-json",
		},
		{
			Name: "comments", Why: "ralphd reads the comments of an issue",
			Run:     ContractStep{Args: jsonArgs(commentsArgs("{B}"))},
			Want:    Expect{Shape: CommentsShape, HasComment: "Second comment"},
			Fixture: "comments-list-json", FixtureVars: map[string]string{"B": "rt-2j9"},
		},
		{
			Name: "export", Why: "every full reading of the tracker: what list --all lists, with every comment, in one call",
			Run: ContractStep{Args: jsonArgs(exportArgs())},
			Want: Expect{Shape: ExportShape, Has: []string{"{A}", "{B}", "{E}", "{R}", "{S}"}, HasComment: "Second comment",
				Of: "{B}", Fields: map[string]string{"dependencies": "related:{A}", "labels": ""}},
		},
		{
			Name: "stats", Why: "BUILD's and the daemon's counts",
			Run:     ContractStep{Args: []string{"stats", "--json"}},
			Want:    Expect{Shape: StatsShape},
			Fixture: "stats-json",
		},
	}
}
