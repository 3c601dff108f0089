package beads

import (
	"slices"
	"strings"
)

// Write is one bd call of ralphd's that changes the tracker, as a Client
// tells its OnWrite: the same *Write before the call and after it.
type Write struct {
	// Args are the call's arguments, without --json and --actor.
	Args []string
	// Actor is the Client's actor ("" when none), whom a claim assigns.
	Actor string
}

// Effect is one change a write makes to one issue, as its argv says.
type Effect struct {
	// Issue is the issue changed; "" is any issue: `bd ready --claim`
	// names none in its argv, and claims one.
	Issue string
	// Op is what changes: the long name of the `bd update` flag that sets
	// a field ("title", "priority", "status", "assignee", "notes",
	// "append-notes", ...; a claim is "status" and "assignee", a close
	// "status" and "close-reason", a reopen "status"), or one of the Op
	// constants.
	Op string
	// Value is what the field is set to, the label added or removed, the
	// other end of a dependency, or the comment's text.
	Value string
	// AnyValue: the value is not known from the argv (a claim's assignee
	// by a Client without an actor is bd's default actor).
	AnyValue bool
}

// The Ops of an Effect that are not `bd update` flags.
const (
	OpLabelAdd     = "label add"
	OpLabelRemove  = "label remove"
	OpDepAdd       = "dep add"       // the issue depends on Value now
	OpDepRemove    = "dep remove"    // the issue no longer depends on Value
	OpDependentAdd = "dependent add" // Value depends on the issue now
	OpDependentRem = "dependent remove"
	OpComment      = "comment add"
	OpCreate       = "create" // the issue was created, with the id its argv gave
)

// updateSwitches are the `bd update` flags ralphd passes without a value.
var updateSwitches = map[string][]Effect{
	"claim":       {{Op: "status", Value: StatusInProgress}, {Op: "assignee"}},
	"clear-notes": {{Op: "notes"}},
}

// Effects returns what the write changes, issue by issue, as far as its
// argv says: every field a flag sets and its value, each label, edge and
// comment. A write that changes no issue its argv names returns none.
func (w *Write) Effects() []Effect {
	args := w.Args
	if w.AnyClaim() {
		return []Effect{{Op: "status", Value: StatusInProgress}, {Op: "assignee", Value: w.Actor, AnyValue: w.Actor == ""}}
	}
	targets := WriteTargets(args)
	if len(targets) == 0 {
		return nil
	}
	id := targets[0]
	one := func(op, value string) []Effect { return []Effect{{Issue: id, Op: op, Value: value}} }
	switch args[0] {
	case "update", "close", "reopen":
		var out []Effect
		switch args[0] {
		case "close":
			out = one("status", StatusClosed)
		case "reopen":
			out = one("status", StatusOpen)
		}
		for i := 2; i < len(args); i++ {
			name, ok := strings.CutPrefix(args[i], "--")
			if !ok || name == "" {
				continue
			}
			name, value, inline := strings.Cut(name, "=")
			if sw, ok := updateSwitches[name]; ok && !inline && args[0] == "update" {
				for _, e := range sw {
					e.Issue = id
					if e.Op == "assignee" {
						e.Value, e.AnyValue = w.Actor, w.Actor == ""
					}
					out = append(out, e)
				}
				continue
			}
			if !inline {
				if i+1 >= len(args) {
					break
				}
				i++
				value = args[i]
			}
			if args[0] != "update" {
				if name != "reason" {
					continue
				}
				if args[0] == "reopen" {
					continue // a reopen's reason is not a field
				}
				name = "close-reason"
			}
			out = append(out, Effect{Issue: id, Op: name, Value: value})
		}
		return out
	case "label":
		if len(args) > 3 {
			if args[1] == "add" {
				return one(OpLabelAdd, args[3])
			}
			return one(OpLabelRemove, args[3])
		}
	case "comments":
		if len(args) > 3 {
			return one(OpComment, args[3])
		}
	case "dep":
		if len(targets) == 2 {
			on, other := OpDepAdd, OpDependentAdd
			if args[1] == "remove" {
				on, other = OpDepRemove, OpDependentRem
			}
			return []Effect{{Issue: targets[0], Op: on, Value: targets[1]}, {Issue: targets[1], Op: other, Value: targets[0]}}
		}
	case "create":
		out := one(OpCreate, "")
		for i := 1; i+1 < len(args); i++ {
			if args[i] == "--labels" {
				for _, l := range strings.Split(args[i+1], ",") {
					if l = strings.TrimSpace(l); l != "" {
						out = append(out, Effect{Issue: id, Op: OpLabelAdd, Value: l})
					}
				}
			}
		}
		return out
	}
	return nil
}

// AnyClaim reports whether the write is a `bd ready --claim`, which
// claims an issue its argv does not name.
func (w *Write) AnyClaim() bool {
	return len(w.Args) > 1 && w.Args[0] == "ready" && slices.Contains(w.Args[1:], "--claim")
}

// WriteTargets returns the issues a bd call with args (without --json
// and --actor) changes, as far as its argv names them: the id of update,
// close and reopen, the issue of label and comments add, both ends of a
// dependency, and the explicit id of create. A call that changes nothing,
// or changes an issue its argv does not name (create without --id, ready
// --claim: those move the issue's updated_at, so a read of what changed
// sees them), returns none.
func WriteTargets(args []string) []string {
	at := func(i int) []string {
		if i < len(args) && args[i] != "" && !strings.HasPrefix(args[i], "-") {
			return []string{args[i]}
		}
		return nil
	}
	if len(args) == 0 {
		return nil
	}
	switch args[0] {
	case "update", "close", "reopen":
		return at(1)
	case "label":
		if len(args) > 1 && (args[1] == "add" || args[1] == "remove") {
			return at(2)
		}
	case "comments":
		if len(args) > 1 && args[1] == "add" {
			return at(2)
		}
	case "dep":
		if len(args) > 1 && (args[1] == "add" || args[1] == "remove") {
			return append(at(2), at(3)...)
		}
	case "create":
		for i := 1; i+1 < len(args); i++ {
			if args[i] == "--id" {
				return at(i + 1)
			}
		}
	}
	return nil
}
