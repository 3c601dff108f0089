package guard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ralphd/ralphd/internal/beads"
)

// This file holds BUILD's powers over issues other than its own. The
// policy table (policy.go) says which commands and flags BUILD may use on
// any issue; what it may do depends on the issue too:
//
//   - The status, assignee and claim of an issue are BUILD's to change
//     only on the iteration's own issue and on the issues BUILD created in
//     this run. On any other issue such a change would take it out of `bd
//     ready` (blocked, in_progress, a claim, closed) without anyone
//     working it. Reopening a closed issue stays allowed: it puts work
//     back (RuleReopen).
//   - A new issue may not have a priority above (numerically below) the
//     iteration's own issue: BUILD works in PLANNING's order and may not
//     jump it with work of its own.
//   - One iteration may create at most MaxCreates issues.
//
// The guard refuses these calls where it can tell the target from the
// argv (Powers.judge), and the tamper diff finds the same changes made
// around it (Diff with Options.Own and Options.Made); both read the rules
// here.

// DefaultCreatePriority is the priority bd 1.0.5 gives an issue created
// without -p (recorded: create-default-json).
const DefaultCreatePriority = 2

// Powers is what the guard knows about one BUILD iteration beyond the
// policy table: whose issue it works on, which issues existed when it
// began and which BUILD created, and how many it may still create. The
// zero value (and nil) limits nothing. It is safe for concurrent use.
type Powers struct {
	Own         string // the iteration's issue
	OwnPriority int    // its priority
	// Before is the tracker when the iteration began (the tamper
	// baseline): an id it does not hold names an issue created since.
	Before Snapshot
	// Made reports whether BUILD created id in this run; nil: none.
	Made func(id string) bool
	// MaxCreates is how many issues the iteration may create; 0: no cap.
	MaxCreates int

	mu      sync.Mutex
	creates int
}

// Creates returns how many creates the guard allowed so far.
func (p *Powers) Creates() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.creates
}

// ownerFlags are the `bd update` flags that change an issue's status,
// assignee or claim.
var ownerFlags = []string{"status", "assignee", "claim"}

// judge applies the powers to a call the policy allowed in BUILD, and
// returns the decision: the same, or a refusal. A create it allows counts
// against MaxCreates.
func (p *Powers) judge(d Decision) Decision {
	if p == nil || !d.Allowed || d.Mode != ModeBuild {
		return d
	}
	pc, err := parseArgs(staticArgs(d.Argv))
	if err != nil || pc.cmd == nil {
		return d
	}
	name := commandName(pc.cmd.path)
	ids := make([]string, 0, len(pc.pos))
	for _, a := range pc.pos {
		ids = append(ids, a.text)
	}
	switch pc.cmd.path {
	case "create", "q":
		return p.create(d, pc)
	case "ready":
		if used(pc, "claim") {
			return d.refuse(RuleOtherIssue, "`--claim` on `bd ready`, which claims whichever issue is ready first")
		}
	case "close":
		if used(pc, "claim-next") {
			return d.refuse(RuleOtherIssue, "`--claim-next` on `bd close`, which claims the next ready issue")
		}
		return p.targets(d, name, ids, "closing")
	case "update":
		var changes []string
		for _, u := range pc.uses {
			if slices.Contains(ownerFlags, u.spec.long) && !slices.Contains(changes, "--"+u.spec.long) {
				changes = append(changes, "--"+u.spec.long)
			}
		}
		if len(changes) > 0 {
			return p.targets(d, name, ids, strings.Join(changes, " and "))
		}
	case "assign":
		if len(ids) > 0 {
			ids = ids[:1] // the rest is the assignee
		}
		return p.targets(d, name, ids, "assigning")
	case "reopen":
		for _, id := range ids {
			if o, ok := p.other(id); ok && p.Before[o].Status != beads.StatusClosed {
				return d.refuse(RuleOtherIssue, fmt.Sprintf("`%s` of %s, which is %s, not closed", name, o, p.Before[o].Status))
			}
		}
	}
	return d
}

// targets refuses the change (what) to ids if one of them is another
// issue's, or if there is none: bd then changes the last issue touched,
// which the guard cannot tell.
func (p *Powers) targets(d Decision, name string, ids []string, what string) Decision {
	if len(ids) == 0 {
		return d.refuse(RuleOtherIssue, fmt.Sprintf("%s with `%s` and no issue id (bd takes the last issue touched)", what, name))
	}
	for _, id := range ids {
		if o, ok := p.other(id); ok {
			return d.refuse(RuleOtherIssue, fmt.Sprintf("%s on %s, which is not %s (this iteration's issue) nor one BUILD created", what, o, p.Own))
		}
	}
	return d
}

// create applies the priority floor and the cap to a `bd create` or `bd q`.
func (p *Powers) create(d Decision, pc parsedCall) Decision {
	given, pr := "", DefaultCreatePriority
	for _, u := range pc.uses {
		if u.spec.long == "priority" {
			given = u.value
		}
	}
	if given != "" {
		n, ok := ParsePriority(given)
		if !ok {
			return d // bd refuses it
		}
		pr = n
	}
	if p.Own != "" && pr < p.OwnPriority {
		what := fmt.Sprintf("priority %d on a new issue, above %s's P%d", pr, p.Own, p.OwnPriority)
		if given == "" {
			what = fmt.Sprintf("a new issue without -p, which bd gives P%d, above %s's P%d", pr, p.Own, p.OwnPriority)
		}
		d = d.refuse(RuleCreatePriority, what)
		d.Instead = fmt.Sprintf("create it with `-p %d` or a larger number; if it is more urgent than %s, say so in a note "+
			"(`bd update %s --append-notes \"…\"`); PLANNING will review it", p.OwnPriority, p.Own, p.Own)
		return d
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.MaxCreates > 0 && p.creates >= p.MaxCreates {
		d = d.refuse(RuleCreateCap, fmt.Sprintf("this iteration has created %d issues, its cap (max_creates)", p.creates))
		if p.Own != "" {
			d.Instead = strings.ReplaceAll(d.Instead, "<id>", p.Own)
		}
		return d
	}
	p.creates++
	return d
}

// other returns the issue of Before that id names, as bd would resolve it,
// when that issue is neither the iteration's own nor one BUILD created.
// An id that could name several issues is another's if any of them is.
func (p *Powers) other(id string) (string, bool) {
	for _, e := range p.resolve(id) {
		if e != p.Own && (p.Made == nil || !p.Made(e)) {
			return e, true
		}
	}
	return "", false
}

// resolve returns the issues of Before that ref may name: bd takes the
// exact id, then the id without its prefix, then a prefix of the part
// after it. It errs on the side of more.
func (p *Powers) resolve(ref string) []string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil
	}
	if _, ok := p.Before[ref]; ok {
		return []string{ref}
	}
	var out []string
	for _, id := range sortedIDs(p.Before) {
		for i := 0; i < len(id); i++ {
			if id[i] != '-' {
				continue
			}
			hash := strings.TrimPrefix(ref, id[:i+1])
			if hash != "" && strings.HasPrefix(id[i+1:], hash) {
				out = append(out, id)
				break
			}
		}
	}
	return out
}

// ParsePriority reads a priority as bd takes it: 0-4, or P0-P4.
func ParsePriority(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if len(s) > 1 && (s[0] == 'P' || s[0] == 'p') {
		s = s[1:]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 4 {
		return 0, false
	}
	return n, true
}

// used reports whether the call sets the flag (a boolean given "false"
// does not).
func used(pc parsedCall, flag string) bool {
	for _, u := range pc.uses {
		if u.spec.long == flag && u.value != "false" {
			return true
		}
	}
	return false
}
