package standin

import (
	"sort"
	"strings"
	"time"
)

// Dependency types bd 1.0.5 accepts (`bd dep add --help`).
const (
	depBlocks      = "blocks"
	depParentChild = "parent-child"
)

var depTypes = []string{"blocks", "tracks", "related", "parent-child", "discovered-from", "until", "caused-by", "validates", "relates-to", "supersedes"}

// Statuses bd 1.0.5 knows (`bd statuses`).
const (
	statusOpen       = "open"
	statusInProgress = "in_progress"
	statusBlocked    = "blocked"
	statusDeferred   = "deferred"
	statusClosed     = "closed"
	statusPinned     = "pinned"
	statusHooked     = "hooked"
)

var builtinStatuses = []struct{ name, icon, category, desc string }{
	{statusOpen, "○", "active", "Available to work (default)"},
	{statusInProgress, "◐", "wip", "Actively being worked on"},
	{statusBlocked, "●", "wip", "Blocked by a dependency"},
	{statusDeferred, "❄", "frozen", "Deliberately put on ice for later"},
	{statusClosed, "✓", "done", "Completed"},
	{statusPinned, "📌", "frozen", "Persistent, stays open indefinitely"},
	{statusHooked, "◇", "wip", "Attached to an agent's hook"},
}

var coreTypes = []struct{ name, desc string }{
	{"task", "General work item (default)"},
	{"bug", "Bug report or defect"},
	{"feature", "New feature or enhancement"},
	{"chore", "Maintenance or housekeeping"},
	{"epic", "Large body of work spanning multiple issues"},
	{"decision", "Architecture decision record (ADR)"},
	{"spike", "Timeboxed investigation to reduce uncertainty before committing to a story"},
	{"story", "User story describing a feature from the user's perspective"},
	{"milestone", "Marks completion of a set of related issues (contains no work itself)"},
}

// normalizeType maps bd's type aliases and reports whether t is valid.
func normalizeType(t string) (string, bool) {
	t = strings.ToLower(strings.TrimSpace(t))
	switch t {
	case "enhancement", "feat":
		t = "feature"
	case "dec", "adr":
		t = "decision"
	}
	for _, c := range coreTypes {
		if c.name == t {
			return t, true
		}
	}
	return t, false
}

func statusIcon(s string) string {
	for _, b := range builtinStatuses {
		if b.name == s {
			return b.icon
		}
	}
	return "?"
}

func validStatus(s string) bool {
	for _, b := range builtinStatuses {
		if b.name == s {
			return true
		}
	}
	return false
}

// parentOf returns the issue's parent (its parent-child target), if any.
func (db *database) parentOf(id string) string {
	best := ""
	for _, d := range db.Deps {
		if d.IssueID == id && d.Type == depParentChild && (best == "" || d.DependsOnID < best) {
			best = d.DependsOnID
		}
	}
	return best
}

// openChildren counts the children of is, an epic, that are not closed
// (0 for any other type): real bd refuses to close such an epic without
// --force.
func (db *database) openChildren(is *issue) int {
	if is.IssueType != "epic" {
		return 0
	}
	n := 0
	for _, k := range db.childrenOf(is.ID) {
		if c := db.get(k); c != nil && c.Status != statusClosed {
			n++
		}
	}
	return n
}

// childrenOf returns the direct children of id.
func (db *database) childrenOf(id string) []string {
	var out []string
	for _, d := range db.Deps {
		if d.DependsOnID == id && d.Type == depParentChild {
			out = append(out, d.IssueID)
		}
	}
	sort.Strings(out)
	return out
}

// descendants returns every issue below id through parent-child links.
func (db *database) descendants(id string) map[string]bool {
	seen := map[string]bool{}
	queue := []string{id}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, c := range db.childrenOf(cur) {
			if !seen[c] && c != id {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	return seen
}

// openBlockers returns the ids of non-closed issues id depends on through
// `blocks` edges.
func (db *database) openBlockers(id string) []string {
	var out []string
	for _, d := range db.depsOf(id) {
		if d.Type != depBlocks {
			continue
		}
		if t := db.get(d.DependsOnID); t != nil && t.Status != statusClosed {
			out = append(out, t.ID)
		}
	}
	return out
}

// closedBlockers returns the ids of closed issues id depends on through
// `blocks` edges.
func (db *database) closedBlockers(id string) []string {
	var out []string
	for _, d := range db.depsOf(id) {
		if d.Type != depBlocks {
			continue
		}
		if t := db.get(d.DependsOnID); t != nil && t.Status == statusClosed {
			out = append(out, t.ID)
		}
	}
	return out
}

func deferredAt(is *issue, now time.Time) bool {
	return is.DeferUntil != nil && is.DeferUntil.After(now)
}

// ancestorDeferred reports whether a parent (at any level) is deferred.
func (db *database) ancestorDeferred(id string, now time.Time) bool {
	seen := map[string]bool{id: true}
	for p := db.parentOf(id); p != "" && !seen[p]; p = db.parentOf(p) {
		seen[p] = true
		if pi := db.get(p); pi != nil && (pi.Status == statusDeferred || deferredAt(pi, now)) {
			return true
		}
	}
	return false
}

// isReady applies bd 1.0.5's ready rules.
func (db *database) isReady(is *issue, now time.Time, includeDeferred bool) bool {
	// A deferral with a date (`create --defer`, `defer --until`) hides the
	// issue only until that date passes.
	expired := is.Status == statusDeferred && is.DeferUntil != nil && !is.DeferUntil.After(now)
	if is.Status != statusOpen && !expired {
		return false
	}
	if !includeDeferred && deferredAt(is, now) {
		return false
	}
	if len(db.openBlockers(is.ID)) > 0 {
		return false
	}
	return !db.ancestorDeferred(is.ID, now)
}

// isBlocked reports whether an unfinished issue waits on an open blocker.
func (db *database) isBlocked(is *issue) bool {
	switch is.Status {
	case statusOpen, statusInProgress, statusBlocked:
		return len(db.openBlockers(is.ID)) > 0
	}
	return false
}

// sortByPriority orders like bd's default: priority ascending, then
// newest first, then id.
func sortByPriority(list []*issue) {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.ID < b.ID
	})
}

// sortOldest orders by creation time ascending, then id.
func sortOldest(list []*issue) {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
}

// sortHybrid puts issues created within 48 hours first (by priority, then
// oldest first) and older issues after them (oldest first).
func sortHybrid(list []*issue, now time.Time) {
	cutoff := now.Add(-48 * time.Hour)
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		ra, rb := a.CreatedAt.After(cutoff), b.CreatedAt.After(cutoff)
		if ra != rb {
			return ra
		}
		if ra && a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
}

// sortByPriorityThenID orders the way bd's human-readable lists do.
func sortByPriorityThenID(list []*issue) {
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].Priority != list[j].Priority {
			return list[i].Priority < list[j].Priority
		}
		return list[i].ID < list[j].ID
	})
}

// cycleTypes are the dependency types whose edges the cycle check follows.
var cycleTypes = map[string]bool{depBlocks: true, depParentChild: true}

// wouldCycle reports whether adding from→to closes a cycle, following
// blocks and parent-child edges.
func (db *database) wouldCycle(from, to string) bool {
	if from == to {
		return true
	}
	seen := map[string]bool{}
	stack := []string{to}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if cur == from {
			return true
		}
		if seen[cur] {
			continue
		}
		seen[cur] = true
		for _, d := range db.Deps {
			if d.IssueID == cur && cycleTypes[d.Type] {
				stack = append(stack, d.DependsOnID)
			}
		}
	}
	return false
}

// sortedIssues returns every issue in the default order.
func (db *database) sortedIssues() []*issue {
	out := append([]*issue{}, db.Issues...)
	sortByPriority(out)
	return out
}
