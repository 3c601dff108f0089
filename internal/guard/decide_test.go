package guard

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

// decideCases is the argv table: allowed and refused calls in both modes,
// covering global flags, --flag=value, -p1, -p 1, -pP0, combined short
// flags, repeated flags, several IDs, aliases, -- separators, flags after
// positionals, unknown commands and flags, and malformed command lines.
var decideCases = []struct {
	name    string
	mode    Mode
	argv    []string
	allowed bool
	rule    string
}{
	// BUILD: read-only.
	{"ready json", ModeBuild, []string{"ready", "--json"}, true, RuleRead},
	{"global json before command", ModeBuild, []string{"--json", "ready"}, true, RuleRead},
	{"ready claim", ModeBuild, []string{"ready", "--claim", "--json"}, true, RuleRead},
	{"show several ids", ModeBuild, []string{"show", "bd-1", "bd-2", "--json"}, true, RuleRead},
	{"show alias view", ModeBuild, []string{"view", "bd-1"}, true, RuleRead},
	{"list filters", ModeBuild, []string{"list", "--status", "open", "-n", "5", "-p=1"}, true, RuleRead},
	{"blocked", ModeBuild, []string{"blocked"}, true, RuleRead},
	{"stats alias", ModeBuild, []string{"stats", "--json"}, true, RuleRead},
	{"search", ModeBuild, []string{"search", "auth bug", "--limit", "10"}, true, RuleRead},
	{"dep tree", ModeBuild, []string{"dep", "tree", "bd-1", "--direction=up"}, true, RuleRead},
	{"dep list", ModeBuild, []string{"dep", "list", "bd-1", "-t", "blocks"}, true, RuleRead},
	{"comments list by id", ModeBuild, []string{"comments", "bd-1", "--json"}, true, RuleRead},
	{"label list", ModeBuild, []string{"label", "list", "bd-1"}, true, RuleRead},
	{"where", ModeBuild, []string{"where"}, true, RuleRead},
	{"version", ModeBuild, []string{"version", "--json"}, true, RuleRead},
	{"statuses", ModeBuild, []string{"statuses"}, true, RuleRead},
	{"count by status", ModeBuild, []string{"count", "--by-status"}, true, RuleRead},
	{"bare bd", ModeBuild, []string{}, true, RuleRead},
	{"root version flag", ModeBuild, []string{"-V"}, true, RuleRead},
	{"help about delete", ModeBuild, []string{"help", "delete"}, true, RuleRead},
	{"prime", ModeBuild, []string{"prime"}, true, RuleRead},
	{"config get", ModeBuild, []string{"config", "get", "export.auto"}, true, RuleRead},
	{"git hook shim", ModeBuild, []string{"hooks", "run", "prepare-commit-msg", ".git/COMMIT_EDITMSG", "message"}, true, RuleGitHook},
	{"hooks install", ModeBuild, []string{"hooks", "install", "--force"}, false, RuleNotAllowed},

	// BUILD: writes it may make.
	{"create with priority and type", ModeBuild, []string{"create", "Title", "-p", "1", "-t", "bug", "-d", "desc", "--json"}, true, RuleCreate},
	{"create alias new", ModeBuild, []string{"new", "Title"}, true, RuleCreate},
	{"quick capture", ModeBuild, []string{"q", "quick", "-p", "2"}, true, RuleCreate},
	{"dep add", ModeBuild, []string{"dep", "add", "a", "b"}, true, RuleDepAdd},
	{"dep add blocked-by type", ModeBuild, []string{"dep", "add", "a", "--blocked-by", "b", "-t", "related"}, true, RuleDepAdd},
	{"dep blocks", ModeBuild, []string{"dep", "a", "--blocks", "b"}, true, RuleDepAdd},
	{"dep blocks short", ModeBuild, []string{"dep", "a", "-b", "b"}, true, RuleDepAdd},
	{"update status", ModeBuild, []string{"update", "a", "--status", "in_progress"}, true, RuleUpdate},
	{"update status short", ModeBuild, []string{"update", "a", "-s", "blocked"}, true, RuleUpdate},
	{"update status equals", ModeBuild, []string{"update", "a", "--status=open"}, true, RuleUpdate},
	{"update status attached", ModeBuild, []string{"update", "a", "-sin_progress"}, true, RuleUpdate},
	{"update notes", ModeBuild, []string{"update", "a", "--notes", "x", "--append-notes", "y"}, true, RuleUpdate},
	{"update description design", ModeBuild, []string{"update", "a", "-d", "desc", "--design", "d"}, true, RuleUpdate},
	{"update assignee short", ModeBuild, []string{"update", "a", "-a", "bob"}, true, RuleUpdate},
	{"update claim", ModeBuild, []string{"update", "a", "--claim"}, true, RuleUpdate},
	{"update add labels repeated", ModeBuild, []string{"update", "a", "--add-label", "x", "--add-label", "y"}, true, RuleUpdate},
	{"note", ModeBuild, []string{"note", "a", "text"}, true, RuleNote},
	{"comments add", ModeBuild, []string{"comments", "add", "a", "text"}, true, RuleNote},
	{"comment", ModeBuild, []string{"comment", "a", "text"}, true, RuleNote},
	{"label add", ModeBuild, []string{"label", "add", "a", "lbl"}, true, RuleLabelAdd},
	{"close reason", ModeBuild, []string{"close", "a", "--reason", "done: go test ./... passes"}, true, RuleClose},
	{"close reason short", ModeBuild, []string{"close", "a", "-r", "done"}, true, RuleClose},
	{"close reason equals", ModeBuild, []string{"close", "a", "--reason=done"}, true, RuleClose},
	{"close reason attached", ModeBuild, []string{"close", "a", "-rdone"}, true, RuleClose},
	{"close several ids and reasons", ModeBuild, []string{"close", "a", "b", "--reason", "x", "--reason", "y"}, true, RuleClose},
	{"close alias done", ModeBuild, []string{"done", "a", "-r", "ok"}, true, RuleClose},
	{"reopen", ModeBuild, []string{"reopen", "a", "-r", "regression"}, true, RuleReopen},
	{"global flags before command", ModeBuild, []string{"--actor", "agent", "-q", "-v",
		"--sandbox", "--readonly", "--dolt-auto-commit", "on", "--profile", "update", "a", "--status", "open"}, true, RuleUpdate},

	// BUILD: another tracker than the work tree's.
	{"db", ModeBuild, []string{"--db", "/x/.beads", "update", "a", "--status", "open"}, false, RuleElsewhere},
	{"db joined", ModeBuild, []string{"update", "a", "--db=/x/.beads/beads.db", "--notes", "n"}, false, RuleElsewhere},
	{"directory short", ModeBuild, []string{"-C", "/tmp", "update", "a", "--status", "open"}, false, RuleElsewhere},
	{"directory short attached", ModeBuild, []string{"-C/home/u/other", "close", "a", "--reason", "done"}, false, RuleElsewhere},
	{"directory long", ModeBuild, []string{"--directory=../other", "show", "a"}, false, RuleElsewhere},
	{"directory on a read", ModeBuild, []string{"-C", "/repo", "ready", "--json"}, false, RuleElsewhere},
	{"global db", ModeBuild, []string{"--global", "create", "t"}, false, RuleElsewhere},
	{"global db after positionals", ModeBuild, []string{"create", "t", "--global"}, false, RuleElsewhere},
	{"db on bare bd", ModeBuild, []string{"--db", "/x"}, false, RuleElsewhere},
	{"db in plan", ModePlan, []string{"--db", "/x/.beads", "update", "a", "-p", "0"}, true, RulePlanAll},
	{"global flag after positionals", ModeBuild, []string{"update", "a", "--status", "open", "--actor", "x"}, true, RuleUpdate},
	{"flag value that looks like a flag", ModeBuild, []string{"update", "--notes", "--priority", "a"}, true, RuleUpdate},
	{"combined bool and status", ModeBuild, []string{"update", "a", "-qs", "open"}, true, RuleUpdate},

	// BUILD: refused.
	{"delete", ModeBuild, []string{"delete", "a", "--force"}, false, RuleDelete},
	{"delete after global flag", ModeBuild, []string{"--actor", "x", "delete", "a"}, false, RuleDelete},
	{"delete after global value flag equals", ModeBuild, []string{"--db=/x", "delete", "a"}, false, RuleDelete},
	{"dep remove", ModeBuild, []string{"dep", "remove", "a", "b"}, false, RuleDepRemove},
	{"dep rm alias", ModeBuild, []string{"dep", "rm", "a", "b"}, false, RuleDepRemove},
	{"dep remove behind a dep flag", ModeBuild, []string{"dep", "--no-cycle-check", "remove", "a", "b"}, false, RuleDepRemove},
	{"dep unrelate", ModeBuild, []string{"dep", "unrelate", "a", "b"}, false, RuleDepRemove},
	{"priority long", ModeBuild, []string{"update", "a", "--priority", "0"}, false, RulePriority},
	{"priority short space", ModeBuild, []string{"update", "a", "-p", "1"}, false, RulePriority},
	{"priority short attached", ModeBuild, []string{"update", "a", "-p1"}, false, RulePriority},
	{"priority P form attached", ModeBuild, []string{"update", "a", "-pP0"}, false, RulePriority},
	{"priority equals", ModeBuild, []string{"update", "a", "--priority=0"}, false, RulePriority},
	{"priority short equals", ModeBuild, []string{"update", "a", "-p=0"}, false, RulePriority},
	{"priority in combined shorts", ModeBuild, []string{"update", "a", "-qp1"}, false, RulePriority},
	{"priority in combined shorts spaced", ModeBuild, []string{"update", "a", "-qvp", "1"}, false, RulePriority},
	{"priority after allowed flag", ModeBuild, []string{"update", "a", "--status", "open", "--priority", "1"}, false, RulePriority},
	{"priority several ids", ModeBuild, []string{"update", "a", "b", "c", "--priority", "1"}, false, RulePriority},
	{"priority before ids", ModeBuild, []string{"update", "-p", "0", "a"}, false, RulePriority},
	{"priority command", ModeBuild, []string{"priority", "a", "0"}, false, RulePriority},
	{"type short", ModeBuild, []string{"update", "a", "-t", "bug"}, false, RuleType},
	{"type equals", ModeBuild, []string{"update", "a", "--type=epic"}, false, RuleType},
	{"acceptance", ModeBuild, []string{"update", "a", "--acceptance", "x"}, false, RuleAcceptance},
	{"title", ModeBuild, []string{"update", "a", "--title", "x"}, false, RuleTitle},
	{"status closed", ModeBuild, []string{"update", "a", "--status", "closed"}, false, RuleStatusClosed},
	{"status closed short", ModeBuild, []string{"update", "a", "-s", "closed"}, false, RuleStatusClosed},
	{"status closed attached", ModeBuild, []string{"update", "a", "-sclosed"}, false, RuleStatusClosed},
	{"status closed equals", ModeBuild, []string{"update", "a", "--status=closed"}, false, RuleStatusClosed},
	{"status closed repeated after open", ModeBuild, []string{"update", "a", "--status", "open", "--status", "closed"}, false, RuleStatusClosed},
	{"status closed combined", ModeBuild, []string{"update", "a", "-qsclosed"}, false, RuleStatusClosed},
	{"status deferred", ModeBuild, []string{"update", "a", "--status", "deferred"}, false, RuleStatus},
	{"status odd case", ModeBuild, []string{"update", "a", "--status", "Open"}, false, RuleStatus},
	{"remove label", ModeBuild, []string{"update", "a", "--remove-label", "x"}, false, RuleLabelRemove},
	{"set labels", ModeBuild, []string{"update", "a", "--set-labels", "x"}, false, RuleLabelRemove},
	{"label remove", ModeBuild, []string{"label", "remove", "a", "x"}, false, RuleLabelRemove},

	// BUILD: flags hidden after `--` (bd takes them for issue ids).
	{"priority after --", ModeBuild, []string{"update", "a", "--", "--priority", "0"}, false, RulePriority},
	{"ids after -- then priority", ModeBuild, []string{"update", "--", "a", "-p0"}, false, RulePriority},
	{"-- first", ModeBuild, []string{"--", "update", "a", "--priority", "0"}, false, RuleUnknownCommand},
	{"status closed after --", ModeBuild, []string{"update", "a", "--", "--status=closed"}, false, RuleStatusClosed},
	{"stuck label after --", ModeBuild, []string{"update", "a", "--", "--add-label", "ralph:stuck"}, false, RuleReservedLabel},
	{"db after --", ModeBuild, []string{"update", "a", "--status", "open", "--", "--db", "/x"}, false, RuleElsewhere},
	{"a note that starts with a dash", ModeBuild, []string{"note", "a", "--", "-5 degrees is too cold"}, true, RuleNote},
	{"an allowed flag after --", ModeBuild, []string{"update", "a", "--", "--notes", "x"}, true, RuleUpdate},
	{"-- as a note's value", ModeBuild, []string{"update", "a", "--notes", "--"}, true, RuleUpdate},

	// BUILD: ralphd's own label, however it is spelled or carried.
	{"stuck label add", ModeBuild, []string{"label", "add", "a", "ralph:stuck"}, false, RuleReservedLabel},
	{"stuck label add several ids", ModeBuild, []string{"label", "add", "a", "b", "ralph:stuck"}, false, RuleReservedLabel},
	{"stuck label add after --", ModeBuild, []string{"label", "add", "--", "a", "ralph:stuck"}, false, RuleReservedLabel},
	{"stuck label add padded", ModeBuild, []string{"label", "add", "a", " ralph:stuck\t"}, false, RuleReservedLabel},
	{"stuck label add other case", ModeBuild, []string{"label", "add", "a", "RALPH:Stuck"}, false, RuleReservedLabel},
	{"stuck label add json first", ModeBuild, []string{"--json", "label", "add", "a", "ralph:stuck"}, false, RuleReservedLabel},
	{"stuck tag", ModeBuild, []string{"tag", "a", "ralph:stuck"}, false, RuleReservedLabel},
	{"stuck add-label", ModeBuild, []string{"update", "a", "--add-label", "ralph:stuck"}, false, RuleReservedLabel},
	{"stuck add-label joined", ModeBuild, []string{"update", "a", "--add-label=ralph:stuck"}, false, RuleReservedLabel},
	{"stuck add-label in a list", ModeBuild, []string{"update", "a", "--add-label", "x,ralph:stuck"}, false, RuleReservedLabel},
	{"stuck add-label quoted in a list", ModeBuild, []string{"update", "a", "--add-label", `x,"ralph:stuck"`}, false, RuleReservedLabel},
	{"stuck add-label repeated", ModeBuild, []string{"update", "a", "--add-label", "x", "--add-label", "ralph:stuck"}, false, RuleReservedLabel},
	{"stuck create labels", ModeBuild, []string{"create", "t", "-l", "ralph:stuck"}, false, RuleReservedLabel},
	{"stuck create labels joined short", ModeBuild, []string{"create", "t", "-lralph:stuck"}, false, RuleReservedLabel},
	{"stuck q labels", ModeBuild, []string{"q", "t", "--labels=x,ralph:stuck"}, false, RuleReservedLabel},
	{"a label like the stuck one", ModeBuild, []string{"label", "add", "a", "ralph:stuck-ish"}, true, RuleLabelAdd},
	{"stuck label in a title", ModeBuild, []string{"create", "why ralph:stuck", "-l", "x"}, true, RuleCreate},
	{"stuck label in notes", ModeBuild, []string{"update", "a", "--append-notes", "ralph:stuck"}, true, RuleUpdate},
	{"stuck label planned", ModeBuild, []string{"label", "list", "ralph:stuck"}, true, RuleRead},
	{"stuck label add plan", ModePlan, []string{"label", "add", "a", "ralph:stuck"}, true, RulePlanAll},
	// BUILD: the fleet's label (issue 33), added or removed by every route.
	{"fleet label add", ModeBuild, []string{"label", "add", "a", "ralph:fleet"}, false, RuleReservedLabel},
	{"fleet label add other case padded", ModeBuild, []string{"label", "add", "a", " RALPH:Fleet "}, false, RuleReservedLabel},
	{"fleet tag", ModeBuild, []string{"tag", "a", "ralph:fleet"}, false, RuleReservedLabel},
	{"fleet add-label in a quoted list", ModeBuild, []string{"update", "a", "--add-label", `x,"ralph:fleet"`}, false, RuleReservedLabel},
	{"fleet add-label after --", ModeBuild, []string{"update", "a", "--", "--add-label=ralph:fleet"}, false, RuleReservedLabel},
	{"fleet create labels", ModeBuild, []string{"create", "ralphd fleet: member x", "-lralph:fleet"}, false, RuleReservedLabel},
	{"fleet q labels", ModeBuild, []string{"q", "t", "--labels=x,ralph:fleet"}, false, RuleReservedLabel},
	{"fleet label remove", ModeBuild, []string{"label", "remove", "a", "ralph:fleet"}, false, RuleLabelRemove},
	{"fleet remove-label", ModeBuild, []string{"update", "a", "--remove-label", "ralph:fleet"}, false, RuleLabelRemove},
	{"fleet set-labels without it", ModeBuild, []string{"update", "a", "--set-labels", "x"}, false, RuleLabelRemove},
	{"a label like the fleet's", ModeBuild, []string{"label", "add", "a", "ralph:fleetish"}, true, RuleLabelAdd},
	{"fleet label in notes", ModeBuild, []string{"update", "a", "--append-notes", "ralph:fleet"}, true, RuleUpdate},
	{"reparent", ModeBuild, []string{"update", "a", "--parent", "b"}, false, RuleParent},
	{"defer flag", ModeBuild, []string{"update", "a", "--defer", "+1d"}, false, RuleSchedule},
	{"defer command", ModeBuild, []string{"defer", "a"}, false, RuleSchedule},
	{"estimate", ModeBuild, []string{"update", "a", "--estimate", "60"}, false, RuleUpdateField},
	{"unknown update flag", ModeBuild, []string{"update", "a", "--bogus"}, false, RuleUnknownFlag},
	{"unknown ready flag", ModeBuild, []string{"ready", "--bogus-flag"}, false, RuleUnknownFlag},
	{"unknown global flag", ModeBuild, []string{"--no-daemon", "ready"}, false, RuleUnknownFlag},
	{"unknown shorthand", ModeBuild, []string{"show", "-Z"}, false, RuleUnknownFlag},
	{"unknown command", ModeBuild, []string{"frobnicate"}, false, RuleUnknownCommand},
	{"command after -- is unknown", ModeBuild, []string{"--", "delete", "a"}, false, RuleUnknownCommand},
	{"close without reason", ModeBuild, []string{"close", "a"}, false, RuleCloseReason},
	{"close empty reason", ModeBuild, []string{"close", "a", "--reason", ""}, false, RuleCloseReason},
	{"close blank reason", ModeBuild, []string{"close", "a", "--reason", "  "}, false, RuleCloseReason},
	{"close empty reason equals", ModeBuild, []string{"close", "a", "--reason="}, false, RuleCloseReason},
	{"close one empty reason of two", ModeBuild, []string{"close", "a", "b", "--reason", "ok", "-r", ""}, false, RuleCloseReason},
	{"close reason file", ModeBuild, []string{"close", "a", "--reason-file", "r.txt"}, false, RuleCloseReason},
	{"close reason as id after --", ModeBuild, []string{"close", "a", "--", "--reason", "x"}, false, RuleCloseReason},
	{"close force", ModeBuild, []string{"close", "a", "--reason", "x", "--force"}, false, RuleCloseForce},
	{"close force short", ModeBuild, []string{"close", "a", "-f", "-r", "x"}, false, RuleCloseForce},
	{"edit", ModeBuild, []string{"edit", "a"}, false, RuleEdit},
	{"sql", ModeBuild, []string{"sql", "DELETE FROM issues"}, false, RuleRaw},
	{"import", ModeBuild, []string{"import", "x.jsonl"}, false, RuleRaw},
	{"restore", ModeBuild, []string{"restore", "a"}, false, RuleRaw},
	{"compact", ModeBuild, []string{"compact"}, false, RuleRaw},
	{"migrate", ModeBuild, []string{"migrate"}, false, RuleRaw},
	{"config set", ModeBuild, []string{"config", "set", "x", "y"}, false, RuleRaw},
	{"batch", ModeBuild, []string{"batch"}, false, RuleRaw},
	{"bare config", ModeBuild, []string{"config"}, false, RuleNotAllowed},
	{"gate", ModeBuild, []string{"gate", "list"}, false, RuleNotAllowed},
	{"dep add parent-child reparents", ModeBuild, []string{"dep", "add", "a", "b", "-t", "parent-child"}, false, RuleParent},
	{"dep add --type=parent-child", ModeBuild, []string{"dep", "add", "a", "b", "--type=parent-child"}, false, RuleParent},
	{"dep add an unknown type", ModeBuild, []string{"dep", "add", "a", "b", "--type", "Parent-Child"}, false, RuleParent},
	{"dep add related", ModeBuild, []string{"dep", "add", "a", "b", "--type", "related"}, true, RuleDepAdd},
	{"dep add from a file", ModeBuild, []string{"dep", "add", "--file", "edges.jsonl"}, false, RuleRaw},
	{"link parent-child", ModeBuild, []string{"link", "a", "b", "-t", "parent-child"}, false, RuleParent},
	{"dep add no cycle check", ModeBuild, []string{"dep", "add", "a", "b", "--no-cycle-check"}, false, RuleCycleCheck},
	{"dep blocks no cycle check", ModeBuild, []string{"dep", "a", "--blocks", "b", "--no-cycle-check"}, false, RuleCycleCheck},
	{"create explicit id", ModeBuild, []string{"create", "--id", "bd-1", "x"}, false, RuleCreateFlag},
	{"create from file", ModeBuild, []string{"create", "-f", "plan.md"}, false, RuleCreateFlag},
	{"missing flag value", ModeBuild, []string{"update", "a", "--priority"}, false, RuleBadArgv},
	{"bad boolean", ModeBuild, []string{"update", "a", "--claim=maybe"}, false, RuleBadArgv},
	{"bad flag syntax", ModeBuild, []string{"update", "a", "---priority", "0"}, false, RuleBadArgv},
	{"help flag before delete", ModeBuild, []string{"--help", "delete", "a"}, false, RuleDelete},

	// PLAN allows everything.
	{"plan delete", ModePlan, []string{"delete", "a", "--force"}, true, RulePlanAll},
	{"plan dep remove", ModePlan, []string{"dep", "rm", "a", "b"}, true, RulePlanAll},
	{"plan priority", ModePlan, []string{"update", "a", "-p0"}, true, RulePlanAll},
	{"plan status closed", ModePlan, []string{"update", "a", "--status", "closed"}, true, RulePlanAll},
	{"plan unknown command", ModePlan, []string{"frobnicate"}, true, RulePlanAll},
	{"plan malformed", ModePlan, []string{"update", "a", "--priority"}, true, RulePlanAll},
	{"plan read", ModePlan, []string{"ready", "--json"}, true, RulePlanAll},

	// No valid mode: refuse everything.
	{"empty mode", Mode(""), []string{"ready"}, false, RuleUnknownMode},
	{"odd mode", Mode("yolo"), []string{"show", "a"}, false, RuleUnknownMode},
}

func TestDecide(t *testing.T) {
	if len(decideCases) < 60 {
		t.Fatalf("want at least 60 argv cases, have %d", len(decideCases))
	}
	for _, tc := range decideCases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			d := Decide(tc.mode, tc.argv)
			is.Equal(d.Allowed, tc.allowed) // allowed
			is.Equal(d.Rule, tc.rule)       // rule
			is.True(d.Reason != "")         // every decision explains itself
			if !d.Allowed {
				is.True(d.Instead != "") // every refusal says what to do instead
			}
		})
	}
}

func TestDecideRecordsCommand(t *testing.T) {
	is := is.New(t)
	d := Decide(ModeBuild, []string{"--actor", "x", "dep", "rm", "a", "b"})
	is.Equal(d.Command, "dep remove")
	is.Equal(d.Argv, []string{"--actor", "x", "dep", "rm", "a", "b"})
	is.Equal(d.Mode, ModeBuild)
}

func TestMessage(t *testing.T) {
	is := is.New(t)
	d := Decide(ModeBuild, []string{"update", "bd-a1b2", "--priority", "0"})
	msg := d.Message()
	is.True(strings.Contains(msg, "refused `bd update bd-a1b2 --priority 0` (rule build-priority)")) // what was refused
	is.True(strings.Contains(msg, "(rule build-priority)"))                                          // the rule
	is.True(strings.Contains(msg, "Instead: add a note with `bd update bd-a1b2 --append-notes"))     // concrete advice
	is.True(strings.Contains(msg, "PLANNING will review it"))

	d = Decide(ModeBuild, []string{"close", "bd-1", "--reason", "tests pass; see go test output"})
	is.True(strings.Contains(d.Message(), "allows `bd close bd-1 --reason 'tests pass; see go test output'`"))

	d = Decide(ModeBuild, []string{"update", "a", "-p1"})
	is.True(strings.Contains(d.Reason, "`-p1` (--priority) on `bd update`")) // names the flag as written
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want Call
	}{
		{
			name: "globals, attached values, repeated flags and --",
			argv: []string{"--actor", "x", "-C", "dir", "--json", "update", "a", "b", "-p1", "--status=open",
				"-qsblocked", "--", "--notes"},
			want: Call{
				Path: []string{"update"},
				Flags: map[string][]string{"actor": {"x"}, "directory": {"dir"}, "json": {"true"},
					"priority": {"1"}, "status": {"open", "blocked"}, "quiet": {"true"}},
				Positionals: []string{"a", "b", "--notes"},
				Modelled:    true,
			},
		},
		{
			name: "alias resolves to the canonical path",
			argv: []string{"dep", "rm", "a", "b"},
			want: Call{Path: []string{"dep", "remove"}, Flags: map[string][]string{},
				Positionals: []string{"a", "b"}, Modelled: true},
		},
		{
			name: "unknown command stays a positional of the root",
			argv: []string{"frobnicate", "--json"},
			want: Call{Flags: map[string][]string{"json": {"true"}}, Positionals: []string{"frobnicate"}, Modelled: true},
		},
		{
			name: "flag value may look like a flag",
			argv: []string{"update", "--notes", "--priority", "a"},
			want: Call{Path: []string{"update"}, Flags: map[string][]string{"notes": {"--priority"}},
				Positionals: []string{"a"}, Modelled: true},
		},
		{
			name: "unknown flags are collected",
			argv: []string{"ready", "--bogus", "-Z"},
			want: Call{Path: []string{"ready"}, Flags: map[string][]string{}, Unknown: []string{"--bogus", "-Z"},
				Modelled: true},
		},
		{
			name: "opaque command",
			argv: []string{"gate", "list", "--x"},
			want: Call{Path: []string{"gate"}, Flags: map[string][]string{}, Unknown: []string{"--x"},
				Positionals: []string{"list"}},
		},
		{
			name: "single dash is a positional",
			argv: []string{"dep", "add", "--file", "-", "-"},
			want: Call{Path: []string{"dep", "add"}, Flags: map[string][]string{"file": {"-"}},
				Positionals: []string{"-"}, Modelled: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			got, err := ParseArgs(tc.argv)
			is.NoErr(err)
			is.Equal(got, tc.want)
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, argv := range [][]string{
		{"update", "a", "--priority"},
		{"update", "a", "-p"},
		{"update", "a", "--claim=maybe"},
		{"update", "a", "-q=perhaps"},
		{"update", "a", "---x"},
		{"update", "a", "--=x"},
	} {
		t.Run(strings.Join(argv, " "), func(t *testing.T) {
			is := is.New(t)
			_, err := ParseArgs(argv)
			var ae *ArgError
			is.True(err != nil)
			is.True(asArgError(err, &ae)) // a malformed command line is an *ArgError
		})
	}
}

func asArgError(err error, target **ArgError) bool {
	ae, ok := err.(*ArgError)
	if ok {
		*target = ae
	}
	return ok
}

func TestParseMode(t *testing.T) {
	is := is.New(t)
	for in, want := range map[string]Mode{"build": ModeBuild, "BUILD": ModeBuild, " plan ": ModePlan, "planning": ModePlan} {
		got, err := ParseMode(in)
		is.NoErr(err)
		is.Equal(got, want)
	}
	_, err := ParseMode("yolo")
	is.True(err != nil)
}

func BenchmarkDecide(b *testing.B) {
	argv := []string{"--actor", "agent", "update", "bd-1", "--status", "in_progress", "--notes", "done", "-p1"}
	for b.Loop() {
		_ = Decide(ModeBuild, argv)
	}
}

func BenchmarkExtractBDCalls(b *testing.B) {
	cmd := `cd sub && go test ./... && bd close bd-1 --reason "tests pass: $(go test ./... | tail -1)" || bash -lc 'bd update bd-1 --status blocked'`
	for b.Loop() {
		if _, err := ExtractBDCalls(cmd); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecordedCommands decides every bd command line recorded from the real
// bd 1.0.5 in the beads contract.
func TestRecordedCommands(t *testing.T) {
	is := is.New(t)
	lines := bdCommandLines(t)
	is.True(len(lines) > 100)
	refusedBy := map[string]int{}
	for _, argv := range lines {
		_, err := ParseArgs(argv)
		is.NoErr(err) // every recorded command line parses
		d := Decide(ModeBuild, argv)
		if !d.Allowed {
			refusedBy[d.Rule]++
		}
		is.True(Decide(ModePlan, argv).Allowed)
	}
	for rule, want := range map[string]int{
		RuleDelete:         5, // bd delete …
		RuleDepRemove:      1, // bd dep remove rt-c1x rt-chn
		RulePriority:       5, // update --priority 0|1|9, the --readonly one, and the multi-id one
		RuleType:           2, // update --type task, -t frobtype
		RuleAcceptance:     1,
		RuleTitle:          1,
		RuleStatusClosed:   1,
		RuleStatus:         1, // --status doing
		RuleUnknownFlag:    3, // --no-daemon, --bogus-flag twice
		RuleUnknownCommand: 1, // bd frobnicate
		RuleRaw:            2, // the two bd init runs
		RuleSchedule:       2, // bd defer
		RuleCreateFlag:     1, // create --id
		RuleLabelRemove:    1,
		RuleNotAllowed:     1, // bd export
		RuleElsewhere:      2, // --db /repo/.beads ready, -C /repo ready
	} {
		is.Equal(refusedBy[rule], want) // recorded calls refused by this rule
		delete(refusedBy, rule)
	}
	is.Equal(len(refusedBy), 0) // and nothing else is refused
}

// Every route the stand-in's `bd --help` and the contract offer for a
// bulk, raw or administrative change, in the spellings an agent would try
// (global flags first, aliases, subcommands of subcommands, JSONL from
// stdin), is refused in BUILD; none is refused in PLAN.
func TestBuildRefusesBulkAndAdminRoutes(t *testing.T) {
	routes := []struct {
		argv []string
		rule string
	}{
		{[]string{"--json", "sql", "UPDATE issues SET priority = 0"}, RuleRaw},
		{[]string{"-q", "sql", "--", "DELETE FROM dependencies"}, RuleRaw},
		{[]string{"import", "-i", ".beads/issues.jsonl"}, RuleRaw},
		{[]string{"import", "--dedup"}, RuleRaw}, // JSONL on stdin
		{[]string{"import", "-"}, RuleRaw},
		{[]string{"restore", "t-1"}, RuleRaw},
		{[]string{"batch", "-f", "ops.txt"}, RuleRaw},
		{[]string{"edit", "t-1", "--title"}, RuleEdit},
		{[]string{"config", "set", "import.auto", "true"}, RuleRaw},
		{[]string{"config", "set", "no-hooks", "false"}, RuleRaw},
		{[]string{"config", "unset", "export.path"}, RuleRaw},
		{[]string{"config", "set-many", "a=b"}, RuleRaw},
		{[]string{"config", "apply"}, RuleRaw},
		{[]string{"--actor", "ralphd", "config", "set", "status.custom", "x"}, RuleRaw},
		{[]string{"init", "--force"}, RuleRaw},
		{[]string{"migrate"}, RuleRaw},
		{[]string{"compact", "--all"}, RuleRaw},
		{[]string{"rename-prefix", "x"}, RuleRaw},
		{[]string{"admin", "cleanup"}, RuleRaw},
		{[]string{"purge"}, RuleRaw},
		{[]string{"dolt", "sql", "-q", "DELETE FROM issues"}, RuleNotAllowed},
		{[]string{"dolt", "commit"}, RuleNotAllowed},
		{[]string{"vc", "commit", "-m", "x"}, RuleNotAllowed},
		{[]string{"branch", "evil"}, RuleNotAllowed},
		{[]string{"backup", "restore"}, RuleNotAllowed},
		{[]string{"export", "-o", ".beads/issues.jsonl"}, RuleNotAllowed},
		{[]string{"federation", "sync"}, RuleNotAllowed},
		{[]string{"kv", "set", "k", "v"}, RuleNotAllowed},
		{[]string{"set-state", "t-1", "stuck=yes"}, RuleNotAllowed},
		{[]string{"label", "propagate", "t-1", "ralph:stuck"}, RuleNotAllowed},
		{[]string{"supersede", "t-1", "--with", "t-2"}, RuleNotAllowed},
		{[]string{"duplicate", "t-1", "--of", "t-2"}, RuleNotAllowed},
		{[]string{"promote", "t-1"}, RuleNotAllowed},
		{[]string{"gate", "resolve", "g-1"}, RuleNotAllowed},
		{[]string{"mol", "burn", "m-1"}, RuleNotAllowed},
		{[]string{"hooks", "install", "--force"}, RuleNotAllowed},
		{[]string{"doctor", "--fix"}, RuleNotAllowed},
		{[]string{"bootstrap"}, RuleNotAllowed},
		{[]string{"epic", "close-eligible"}, RuleNotAllowed},
		{[]string{"mail", "send"}, RuleNotAllowed},
		{[]string{"upgrade"}, RuleNotAllowed},
	}
	for _, r := range routes {
		t.Run(strings.Join(r.argv, " "), func(t *testing.T) {
			is := is.New(t)
			d := Decide(ModeBuild, r.argv)
			is.True(!d.Allowed)
			is.Equal(d.Rule, r.rule)
			is.True(d.Instead != "") // the refusal says what to do instead
			is.True(Decide(ModePlan, r.argv).Allowed)
		})
	}
}
