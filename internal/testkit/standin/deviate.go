package standin

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// DeviateEnv names the environment variable that starts the stand-in
// with deliberate deviations from bd 1.0.5, a comma-separated list of
// the Deviate* names below. Tests use it to see ralphd's bd contract
// check fail and name the difference, and to drive the paths ralphd
// takes for later bds. Test kit only: real bd has no such knob.
const DeviateEnv = "STANDIN_DEVIATE"

// The deviations.
const (
	// DeviateRenamedField prints each issue's "priority" as "prio".
	DeviateRenamedField = "renamed-field"
	// DeviateExitCode makes `ready --claim --json` with nothing to claim
	// exit 1 (it still prints []).
	DeviateExitCode = "exit-code"
	// DeviateRefusedFlag makes update refuse --append-notes as an unknown
	// flag.
	DeviateRefusedFlag = "refused-flag"
	// DeviateNotes gives update the notes rules of later bds, from bd's
	// changelog (not verified against those versions): --notes over
	// existing notes is refused unless --force, --notes "" is refused in
	// favour of --clear-notes.
	DeviateNotes = "notes-refused"
	// DeviateClaimStale makes a claim of an issue another actor holds
	// exit 13 with a message ralphd does not know, as a later bd's
	// compare-and-set does when the issue changed (from bd's changelog).
	DeviateClaimStale = "claim-exit-13"
	// DeviateLeases adds `bd heartbeat <id>`, which renews a claim's
	// lease in later bds (from bd's changelog); each call appends
	// "<id> <actor>" to .beads/heartbeats.log.
	DeviateLeases = "leases"
)

// deviates reports whether the stand-in runs with deviation d.
func (inv *invocation) deviates(d string) bool {
	return slices.Contains(strings.Split(inv.env[DeviateEnv], ","), d)
}

// deviateCommand changes the command's flags for the deviations that add
// or remove one.
func (inv *invocation) deviateCommand(cmd *command) {
	if cmd.name != "update" {
		return
	}
	if inv.deviates(DeviateRefusedFlag) {
		cmd.local = slices.DeleteFunc(slices.Clone(cmd.local), func(f *flagSpec) bool { return f.name == "append-notes" })
	}
	if inv.deviates(DeviateNotes) {
		cmd.local = append(slices.Clone(cmd.local),
			&flagSpec{name: "clear-notes", typ: "bool", def: "false", usage: "Clear the notes"},
			&flagSpec{name: "force", typ: "bool", def: "false", usage: "Replace existing notes"})
		cmd.supported["clear-notes"], cmd.supported["force"] = true, true
	}
}

// notesRefused applies DeviateNotes to one update of is: it returns the
// refusal, or "" when the update may go on.
func (inv *invocation) notesRefused(is *issue) string {
	if !inv.deviates(DeviateNotes) || !inv.fl.changed("notes") {
		return ""
	}
	switch {
	case inv.fl.str("notes") == "":
		return fmt.Sprintf("Error updating %s: --notes \"\" is no longer supported; use --clear-notes", is.ID)
	case is.Notes != "" && !inv.fl.boolean("force"):
		return fmt.Sprintf("Error updating %s: issue already has notes; use --append-notes, or --force to replace them", is.ID)
	}
	return ""
}

// renameFields applies DeviateRenamedField to a JSON value about to be
// printed.
func renameFields(v any) any {
	switch v := v.(type) {
	case obj:
		out := make(obj, len(v))
		for i, e := range v {
			if e.k == "priority" {
				e.k = "prio"
			}
			out[i] = kv{e.k, renameFields(e.v)}
		}
		return out
	case []obj:
		out := make([]obj, len(v))
		for i, o := range v {
			out[i] = renameFields(o).(obj)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = renameFields(x)
		}
		return out
	}
	return v
}

// heartbeat runs DeviateLeases's `bd heartbeat <id>...`; done is false
// when args are not a heartbeat call.
func (inv *invocation) heartbeat(args []string) (code int, done bool) {
	var words, flags []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--actor" && i+1 < len(args):
			flags = append(flags, args[i+1])
			i++
		case strings.HasPrefix(a, "-"):
			if a == "--help" || a == "-h" {
				words = append(words, "--help")
			}
		default:
			words = append(words, a)
		}
	}
	if len(words) == 0 || words[0] != "heartbeat" {
		return 0, false
	}
	if slices.Contains(words, "--help") {
		fmt.Fprint(inv.stdout, "Renew the lease of your claim on issues.\n\nUsage:\n  bd heartbeat <id>... [flags]\n")
		return 0, true
	}
	ws, err := discover(inv.cwd, "", inv.env["BEADS_DIR"])
	if err != nil {
		fmt.Fprint(inv.stderr, noDBMessage)
		return 1, true
	}
	actor := inv.env["BEADS_ACTOR"]
	if len(flags) > 0 {
		actor = flags[len(flags)-1]
	}
	f, err := os.OpenFile(filepath.Join(ws.beadsDir, "heartbeats.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return inv.fail(err.Error()), true
	}
	defer f.Close()
	for _, id := range words[1:] {
		fmt.Fprintf(f, "%s %s %s\n", id, actor, time.Now().UTC().Format(time.RFC3339Nano))
	}
	return 0, true
}
