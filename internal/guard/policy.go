package guard

import (
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/beads"
)

// Rule IDs. Every Decision names one of them.
const (
	RulePlanAll     = "plan-all"
	RuleUnknownMode = "unknown-mode"

	RuleRead     = "build-read"
	RuleCreate   = "build-create"
	RuleUpdate   = "build-update"
	RuleNote     = "build-note"
	RuleLabelAdd = "build-label-add"
	RuleDepAdd   = "build-dep-add"
	RuleClose    = "build-close"
	RuleReopen   = "build-reopen"
	RuleGitHook  = "build-git-hook"

	RuleDelete         = "build-delete"
	RuleDepRemove      = "build-dep-remove"
	RulePriority       = "build-priority"
	RuleType           = "build-type"
	RuleAcceptance     = "build-acceptance"
	RuleTitle          = "build-title"
	RuleStatusClosed   = "build-status-closed"
	RuleStatus         = "build-status"
	RuleLabelRemove    = "build-label-remove"
	RuleReservedLabel  = "build-reserved-label"
	RuleParent         = "build-parent"
	RuleSchedule       = "build-schedule"
	RuleUpdateField    = "build-update-field"
	RuleCreateFlag     = "build-create-flag"
	RuleCycleCheck     = "build-cycle-check"
	RuleCloseReason    = "build-close-reason"
	RuleCloseForce     = "build-close-force"
	RuleEdit           = "build-edit"
	RuleRaw            = "build-raw"
	RuleNotAllowed     = "build-not-allowed"
	RuleUnknownCommand = "build-unknown-command"
	RuleUnknownFlag    = "build-unknown-flag"
	RuleFlag           = "build-flag"
	RuleBadArgv        = "build-bad-argv"
	RuleDynamic        = "build-dynamic"
	RuleElsewhere      = "build-other-tracker"
	RuleOtherIssue     = "build-other-issue"
	RuleCreatePriority = "build-create-priority"
	RuleCreateCap      = "build-create-cap"

	RuleForgeMerge = "forge-merge"
	RuleForgeOther = "forge-other"
)

// Rule is one named rule of the policy: why a call is allowed or refused,
// and for a refusal, what the agent should do instead.
type Rule struct {
	ID      string
	Reason  string
	Instead string
}

// StuckLabel marks an issue ralphd gave up on after its failed attempts:
// ralphd adds it, skips the issue from then on, and PLANNING (or `ralphd
// reset`) removes it to give the issue a fresh start.
const StuckLabel = "ralph:stuck"

// FleetLabel marks the issues by which daemons sharing a tracker plan one
// at a time (their planner lease, their members and the anchor those
// depend on; package modes, fleet.go): ralphd creates and keeps them.
const FleetLabel = "ralph:fleet"

// ReservedLabels returns the labels only ralphd adds, because it decides
// by them: BUILD may not add one (RuleReservedLabel), nor remove one (as
// any label, RuleLabelRemove), and the tamper diff reverts either made
// around the guard.
func ReservedLabels() []string { return []string{StuckLabel, FleetLabel} }

// BuildStatuses returns the statuses BUILD may set with `bd update
// --status`; closing goes through `bd close`.
func BuildStatuses() []string { return slices.Clone(allowedStatuses) }

// noteInstead is the standard way for BUILD to ask PLANNING for a change.
const noteInstead = "add a note with `bd update <id> --append-notes \"…\"` saying what should change and why, " +
	"or create a blocking issue (`bd create \"…\"` then `bd dep add <id> <new-id>`); PLANNING will review it"

// rules holds every rule. It is the single source of the reasons and advice
// that refusals, `ralphd policy` and the README print.
var rules = []Rule{
	{RulePlanAll, "PLANNING may run any bd command", ""},
	{RuleUnknownMode, "the guard's mode is neither build nor plan, so every call is refused",
		"run the agent through ralphd, which sets " + EnvMode + " to build or plan"},

	{RuleRead, "read-only commands are always allowed", ""},
	{RuleCreate, "BUILD may create issues; PLANNING reviews new issues", ""},
	{RuleUpdate, "BUILD may set status (open, in_progress, blocked), notes, description, design, " +
		"assignee and claim, and add labels", ""},
	{RuleNote, "BUILD may add notes and comments", ""},
	{RuleLabelAdd, "BUILD may add labels", ""},
	{RuleDepAdd, "BUILD may add dependencies", ""},
	{RuleClose, "BUILD may close issues with a non-empty --reason that cites the evidence", ""},
	// Reopening is a status change, which BUILD may make (RuleUpdate: `bd
	// update --status open` reopens a closed issue too). It puts work back;
	// it never makes unproven work count as done, and the next close is
	// judged like any other. So the tamper diff does not judge it either.
	{RuleReopen, "BUILD may reopen issues: a reopen puts work back in the queue, and its next close is judged like any other", ""},
	{RuleGitHook, "git runs bd's hooks on commit, merge, push and checkout, so they must work while BUILD commits code", ""},

	{RuleDelete, "deleting issues is PLANNING's power",
		"if the issue is obsolete or a duplicate, add a note with `bd update <id> --append-notes \"…\"` " +
			"saying why; PLANNING will review it"},
	{RuleDepRemove, "removing dependencies is PLANNING's power",
		"if a dependency is wrong, add a note with `bd update <id> --append-notes \"…\"` saying why; " +
			"if it blocks you, `bd update <id> --status blocked`; PLANNING will review it"},
	{RulePriority, "changing priority is PLANNING's power; BUILD works issues in the order PLANNING set",
		"add a note with `bd update <id> --append-notes \"…\"` saying which priority it should have and why, " +
			"or create a blocking issue; PLANNING will review it"},
	{RuleType, "changing an issue's type is PLANNING's power", noteInstead},
	{RuleAcceptance, "acceptance criteria belong to PLANNING; BUILD meets them and does not rewrite them",
		"if the criteria are wrong or cannot be met, add a note with `bd update <id> --append-notes \"…\"` " +
			"and create a blocking issue; PLANNING will review it"},
	{RuleTitle, "the title defines the work item; retitling it changes what the issue means, which is PLANNING's power",
		"propose the new title in a note: `bd update <id> --append-notes \"…\"`; PLANNING will review it"},
	{RuleStatusClosed, "`bd update --status closed` closes even past open blockers and records no reason; " +
		"closing must go through `bd close --reason`",
		"close with `bd close <id> --reason \"<what you did, and the command or test output that proves it>\"`"},
	{RuleStatus, "BUILD may set the status only to open, in_progress or blocked",
		"use `bd update <id> --status in_progress|blocked|open`; to finish, `bd close <id> --reason \"…\"`; " +
			"to postpone, set it blocked and add a note; PLANNING will review it"},
	{RuleLabelRemove, "BUILD may add labels but not remove or replace them",
		"add labels with `bd label add <id> <label>`; to drop one, add a note with " +
			"`bd update <id> --append-notes \"…\"`; PLANNING will review it"},
	{RuleReservedLabel, "`" + StuckLabel + "` is ralphd's own judgement that BUILD gave up on an issue, made after the attempts " +
		"it counts, and `" + FleetLabel + "` marks the issues by which daemons sharing the tracker take turns planning; only ralphd adds them",
		"if you cannot finish the issue, say why in a note (`bd update <id> --append-notes \"…\"`), " +
			"or set it blocked (`bd update <id> --status blocked`), and stop; ralphd counts the failed attempts " +
			"and marks the issue stuck itself"},
	{RuleParent, "reparenting restructures the issue graph, which is PLANNING's power", noteInstead},
	{RuleSchedule, "deferring and due dates decide when work happens, which is PLANNING's power",
		"if the issue cannot be done now, `bd update <id> --status blocked` and add a note with " +
			"`bd update <id> --append-notes \"…\"` saying why; PLANNING will review it"},
	{RuleUpdateField, "BUILD may change only status, notes, description, design, assignee and claim, and add labels",
		noteInstead},
	{RuleCreateFlag, "bulk, explicit-ID, cross-repo and infrastructure issue creation is PLANNING's job",
		"create one issue at a time with `bd create \"title\" -d \"…\"` and link it with `bd dep add`"},
	{RuleCycleCheck, "skipping the cycle check can leave a dependency cycle that only PLANNING can undo",
		"run the same command without --no-cycle-check"},
	{RuleCloseReason, "closing needs a non-empty --reason, given inline, that cites the evidence",
		"`bd close <id> --reason \"<what you did, and the command or test output that proves it>\"`"},
	{RuleCloseForce, "--force closes pinned issues and issues with unsatisfied gates; BUILD may not override those checks",
		"close without --force; if the close is refused, add a note with `bd update <id> --append-notes \"…\"` " +
			"and leave it for PLANNING"},
	{RuleEdit, "`bd edit` opens an editor on any field, including those BUILD may not change",
		"use `bd update <id>` with --notes, --append-notes, --description, --design, --status or --assignee"},
	{RuleRaw, "raw, bulk and administrative changes bypass the per-field rules; they belong to PLANNING or a human",
		"make the change with the allowed commands one at a time, or describe it in a note; PLANNING will review it"},
	{RuleNotAllowed, "this bd command is not on the BUILD allowlist",
		"`ralphd policy` lists what BUILD may run; if you need this change, " + noteInstead},
	{RuleUnknownCommand, "there is no such bd command, and BUILD refuses commands it does not know",
		"check the spelling; `bd --help` lists the commands"},
	{RuleUnknownFlag, "this command has no such flag, and BUILD refuses flags it does not know",
		"`bd <command> --help` lists the flags; drop the flag or use an allowed one"},
	{RuleFlag, "this flag is not on BUILD's allowlist for this command",
		"`ralphd policy` lists the flags BUILD may use; if you need this change, " + noteInstead},
	{RuleBadArgv, "the command line is malformed; bd would reject it and ralphd cannot check it",
		"write it as `bd <command> [flags] [ids]`"},
	{RuleElsewhere, "BUILD works on this project's tracker only: --db, --directory (-C) and --global, " +
		"or a call made from outside the work tree, can open another one, where ralphd judges nothing and whose " +
		"own files and hooks the agent may have written",
		"run bd from the work tree, without --db, -C or --global"},
	{RuleOtherIssue, "BUILD may change the status, assignee or claim only of its own issue and of the issues BUILD created " +
		"in this run: on another issue that takes it out of `bd ready` with no one working it; closing another issue " +
		"is that issue's iteration's job",
		"work on your own issue only; if another issue is blocked, wrong or done, say so in a note on it " +
			"(`bd update <id> --append-notes \"…\"`), or add a dependency (`bd dep add`); PLANNING will review it"},
	{RuleCreatePriority, "a new issue may not have a priority above the iteration's own issue: BUILD works in the order " +
		"PLANNING set and may not jump it with work of its own", noteInstead},
	{RuleCreateCap, "one BUILD iteration may create only so many issues (max_creates): splitting work up is PLANNING's job",
		"describe the rest of the work in one issue, or in a note on your own issue (`bd update <id> --append-notes \"…\"`), " +
			"and stop; PLANNING will split it"},
	{RuleForgeMerge, "no agent of ralphd, in BUILD or PLANNING, may merge a pull request, approve or dismiss a review, " +
		"or read the forge login's token: ralphd never merges, and work lands only when a person or the forge's auto-merge merges it",
		"leave the pull request as it is: ralphd integrates through the merge queue; a person or the forge's auto-merge " +
			"merges the pull request. Finish your issue (in BUILD, `bd close <id> --reason \"…\"`); " +
			"reading the pull request (`gh pr view`, `gh pr checks`, `gh pr diff`) is allowed"},
	{RuleForgeOther, "the guard refuses only the forge CLIs' verbs that merge, approve or hand out the token; " +
		"the sandbox and the forge's branch protection judge the rest", ""},
	{RuleDynamic, "part of the command is computed at run time (a variable, command substitution, glob or xargs " +
		"input) where ralphd must read it to decide",
		"write the command name, the flag names and the values of --status and --reason literally"},
}

// ruleByID returns the rule with the given ID.
func ruleByID(id string) Rule {
	for _, r := range rules {
		if r.ID == id {
			return r
		}
	}
	return Rule{ID: id, Reason: "unknown rule"}
}

// allFlags allows every flag of a modelled command.
const allFlags = "*"

// commandPolicy is the BUILD policy for one command. PLAN allows everything.
type commandPolicy struct {
	path  string // canonical command path
	allow bool   // BUILD may run the command (subject to the flag rules below)
	rule  string // the rule that allows it, or the rule that refuses it
	// flags lists the command's own flags BUILD may use (long names), or
	// allFlags. Global flags are always allowed.
	flags string
	// refuse maps flags BUILD may not use to the specific rule; other flags
	// missing from flags fall under RuleFlag.
	refuse map[string]string
	// values restricts the values BUILD may give a flag.
	values map[string][]string
	// valueRule names the rule that refuses a value outside values (the
	// default is RuleStatus).
	valueRule map[string]string
	// require lists flags that must be present with a non-blank value.
	require []string
	// labelFlags are the flags whose values are labels to add, and
	// labelArg says the positionals may be one: none may be a reserved
	// label (RuleReservedLabel).
	labelFlags []string
	labelArg   bool
	note       string
}

// allowedStatuses are the statuses BUILD may set with `bd update --status`.
var allowedStatuses = []string{beads.StatusOpen, beads.StatusInProgress, beads.StatusBlocked}

// allowedDepTypes are the dependency types BUILD may add: every type bd
// 1.0.5 knows but parent-child, which reparents (RuleParent).
var allowedDepTypes = []string{"blocks", "tracks", "related", "discovered-from", "until", "caused-by",
	"validates", "relates-to", "supersedes"}

// policy is the BUILD allowlist, kept as data in one place. A command that
// is not listed is refused with RuleNotAllowed (or RuleUnknownCommand if bd
// does not have it).
var policy = []commandPolicy{
	// Read-only.
	{path: "", allow: true, rule: RuleRead, flags: allFlags, note: "bare `bd` prints help; `bd --version`"},
	{path: "ready", allow: true, rule: RuleRead, flags: allFlags, note: "`--claim` claims the first ready issue"},
	{path: "show", allow: true, rule: RuleRead, flags: allFlags},
	{path: "list", allow: true, rule: RuleRead, flags: allFlags},
	{path: "blocked", allow: true, rule: RuleRead, flags: allFlags},
	{path: "status", allow: true, rule: RuleRead, flags: allFlags},
	{path: "search", allow: true, rule: RuleRead, flags: allFlags},
	{path: "count", allow: true, rule: RuleRead, flags: allFlags},
	{path: "children", allow: true, rule: RuleRead, flags: allFlags},
	{path: "query", allow: true, rule: RuleRead, flags: allFlags},
	{path: "graph", allow: true, rule: RuleRead, flags: allFlags},
	{path: "graph check", allow: true, rule: RuleRead, flags: allFlags},
	{path: "history", allow: true, rule: RuleRead, flags: allFlags},
	{path: "stale", allow: true, rule: RuleRead, flags: allFlags},
	{path: "dep tree", allow: true, rule: RuleRead, flags: allFlags},
	{path: "dep list", allow: true, rule: RuleRead, flags: allFlags},
	{path: "dep cycles", allow: true, rule: RuleRead, flags: allFlags},
	{path: "comments", allow: true, rule: RuleRead, flags: allFlags, note: "`bd comments <id>` lists comments"},
	{path: "comments list", allow: true, rule: RuleRead, flags: allFlags},
	{path: "label list", allow: true, rule: RuleRead, flags: allFlags},
	{path: "label list-all", allow: true, rule: RuleRead, flags: allFlags},
	{path: "config get", allow: true, rule: RuleRead, flags: allFlags},
	{path: "config list", allow: true, rule: RuleRead, flags: allFlags},
	{path: "where", allow: true, rule: RuleRead, flags: allFlags},
	{path: "info", allow: true, rule: RuleRead, flags: allFlags},
	{path: "context", allow: true, rule: RuleRead, flags: allFlags},
	{path: "version", allow: true, rule: RuleRead, flags: allFlags},
	{path: "statuses", allow: true, rule: RuleRead, flags: allFlags},
	{path: "types", allow: true, rule: RuleRead, flags: allFlags},
	{path: "prime", allow: true, rule: RuleRead, flags: allFlags},
	{path: "help", allow: true, rule: RuleRead, flags: allFlags},
	{path: "human", allow: true, rule: RuleRead, flags: allFlags},
	{path: "quickstart", allow: true, rule: RuleRead, flags: allFlags},
	{path: "hooks list", allow: true, rule: RuleRead, flags: allFlags},
	{path: "hooks run", allow: true, rule: RuleGitHook, flags: allFlags, note: "what bd's git hook shims call"},

	// Writes BUILD may make.
	{path: "create", allow: true, rule: RuleCreate, flags: allFlags,
		refuse: map[string]string{
			"id": RuleCreateFlag, "force": RuleCreateFlag, "repo": RuleCreateFlag, "file": RuleCreateFlag,
			"graph": RuleCreateFlag, "ephemeral": RuleCreateFlag, "wisp-type": RuleCreateFlag,
			"mol-type": RuleCreateFlag, "event-actor": RuleCreateFlag, "event-category": RuleCreateFlag,
			"event-payload": RuleCreateFlag, "event-target": RuleCreateFlag, "waits-for": RuleCreateFlag,
			"waits-for-gate": RuleCreateFlag, "no-history": RuleCreateFlag,
		},
		labelFlags: []string{"labels"},
		note:       "a new issue's priority, type and acceptance are part of creating it"},
	{path: "q", allow: true, rule: RuleCreate, flags: allFlags, labelFlags: []string{"labels"},
		note: "quick capture: create, print the ID"},
	{path: "update", allow: true, rule: RuleUpdate,
		flags: "status notes append-notes description body-file stdin allow-empty-description design " +
			"design-file assignee claim add-label session",
		refuse:     withProtectedFlags(updateRefusals),
		values:     map[string][]string{"status": allowedStatuses},
		labelFlags: []string{"add-label"},
		note:       "--status only open, in_progress or blocked"},
	{path: "note", allow: true, rule: RuleNote, flags: allFlags, note: "appends to the notes"},
	{path: "comment", allow: true, rule: RuleNote, flags: allFlags},
	{path: "comments add", allow: true, rule: RuleNote, flags: allFlags},
	{path: "label add", allow: true, rule: RuleLabelAdd, flags: allFlags, labelArg: true},
	{path: "tag", allow: true, rule: RuleLabelAdd, flags: allFlags, labelArg: true, note: "adds one label"},
	{path: "assign", allow: true, rule: RuleUpdate, flags: allFlags, note: "sets the assignee"},
	{path: "dep add", allow: true, rule: RuleDepAdd, flags: allFlags,
		refuse: map[string]string{"no-cycle-check": RuleCycleCheck, "file": RuleRaw},
		values: map[string][]string{"type": allowedDepTypes}, valueRule: map[string]string{"type": RuleParent},
		note: "--type anything but parent-child"},
	{path: "dep", allow: true, rule: RuleDepAdd, flags: allFlags,
		refuse: map[string]string{"no-cycle-check": RuleCycleCheck},
		note:   "`bd dep <blocker> --blocks <blocked>`"},
	{path: "dep relate", allow: true, rule: RuleDepAdd, flags: allFlags, note: "adds a relates_to link"},
	{path: "link", allow: true, rule: RuleDepAdd, flags: allFlags,
		values: map[string][]string{"type": allowedDepTypes}, valueRule: map[string]string{"type": RuleParent},
		note: "shorthand for `bd dep add`; --type anything but parent-child"},
	{path: "close", allow: true, rule: RuleClose, flags: "reason claim-next continue no-auto session suggest-next",
		refuse:  map[string]string{"force": RuleCloseForce, "reason-file": RuleCloseReason},
		require: []string{"reason"},
		note:    "--reason (-r) must be non-empty"},
	{path: "reopen", allow: true, rule: RuleReopen, flags: allFlags},

	// Refused with a specific rule.
	{path: "delete", rule: RuleDelete},
	{path: "dep remove", rule: RuleDepRemove},
	{path: "dep unrelate", rule: RuleDepRemove},
	{path: "priority", rule: RulePriority},
	{path: "label remove", rule: RuleLabelRemove},
	{path: "defer", rule: RuleSchedule},
	{path: "undefer", rule: RuleSchedule},
	{path: "edit", rule: RuleEdit},
	{path: "sql", rule: RuleRaw},
	{path: "import", rule: RuleRaw},
	{path: "restore", rule: RuleRaw},
	{path: "batch", rule: RuleRaw, note: "its stdin may hold any write"},
	{path: "compact", rule: RuleRaw},
	{path: "migrate", rule: RuleRaw},
	{path: "config set", rule: RuleRaw},
	{path: "config set-many", rule: RuleRaw},
	{path: "config unset", rule: RuleRaw},
	{path: "config apply", rule: RuleRaw},
	{path: "init", rule: RuleRaw},
	{path: "rename", rule: RuleRaw},
	{path: "rename-prefix", rule: RuleRaw},
	{path: "flatten", rule: RuleRaw},
	{path: "gc", rule: RuleRaw},
	{path: "prune", rule: RuleRaw},
	{path: "purge", rule: RuleRaw},
	{path: "admin", rule: RuleRaw},
}

// updateRefusals are the `bd update` flags BUILD may not use beside those
// of the protected fields, which their rows refuse (fields.go): these
// remove labels, or set what the table does not protect.
var updateRefusals = map[string]string{
	"remove-label": RuleLabelRemove, "set-labels": RuleLabelRemove,
	"metadata": RuleUpdateField, "set-metadata": RuleUpdateField,
	"unset-metadata": RuleUpdateField, "ephemeral": RuleUpdateField, "persistent": RuleUpdateField,
	"history": RuleUpdateField, "no-history": RuleUpdateField, "await-id": RuleUpdateField,
}

// policyFor returns the BUILD policy of a canonical command path.
func policyFor(path string) (commandPolicy, bool) {
	for _, p := range policy {
		if p.path == path {
			return p, true
		}
	}
	return commandPolicy{}, false
}

// allows reports whether BUILD may use the command's own flag name.
func (p commandPolicy) allows(flag string) bool {
	if _, refused := p.refuse[flag]; refused {
		return false
	}
	if p.flags == allFlags {
		return true
	}
	for _, f := range strings.Fields(p.flags) {
		if f == flag {
			return true
		}
	}
	return false
}

// restricted reports whether some use of the command is refused in BUILD,
// so that arguments unknown until run time cannot be allowed.
func (p commandPolicy) restricted() bool {
	return !p.allow || p.flags != allFlags || len(p.refuse) > 0 || len(p.values) > 0 || len(p.require) > 0 ||
		len(p.labelFlags) > 0 || p.labelArg
}

// reservedIn returns the reserved label that the label value v would
// add, or "". It reads v as loosely as bd could: a list of labels split
// at commas, quoted or not, trimmed, in any case.
func reservedIn(v string) string {
	for _, part := range strings.Split(strings.ReplaceAll(v, `"`, ""), ",") {
		for _, l := range ReservedLabels() {
			if strings.EqualFold(strings.TrimSpace(part), l) {
				return l
			}
		}
	}
	return ""
}

// isGlobalFlag reports whether the long flag name is one of bd's global
// flags (or the root's --version), which BUILD may use but for
// trackerFlags.
func isGlobalFlag(name string) bool {
	return name == "version" || globalFlagNames[name]
}

// trackerFlags are the global flags that choose another tracker than the
// one bd finds from the work tree (RuleElsewhere).
var trackerFlags = []string{"db", "directory", "global"}

// globalFlagNames is the set of bd's global flag names. It is never modified.
var globalFlagNames = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range parseFlagList(globalFlags) {
		m[f.long] = true
	}
	return m
}()
