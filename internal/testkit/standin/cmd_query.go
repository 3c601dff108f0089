package standin

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

const statusLegend = "Status: ○ open  ◐ in_progress  ● blocked  ✓ closed  ❄ deferred\n"

// typeTag is the "[bug] " marker bd's human-readable lists print; only
// bugs and epics get one.
func typeTag(t string) string {
	if t == "bug" || t == "epic" {
		return "[" + t + "] "
	}
	return ""
}

// issueFilter holds the filters `ready` and `list` share.
type issueFilter struct {
	types, excludeTypes      []string
	priority                 *int
	assignee                 *string
	unassigned               bool
	labels, labelsAny        []string
	excludeLabels            []string
	hasMetadataKey           string
	metadataFields           map[string]string
	within                   map[string]bool // restrict to these ids (parent scoping)
	labelPattern, labelRegex string
}

// newFilter reads the shared filter flags.
func (inv *invocation) newFilter() (*issueFilter, error) {
	fl := inv.fl
	f := &issueFilter{}
	if fl.changed("type") {
		for _, t := range strings.Split(fl.str("type"), ",") {
			f.types = append(f.types, normalizeFilterType(t))
		}
	}
	for _, t := range fl.list("exclude-type") {
		f.excludeTypes = append(f.excludeTypes, normalizeFilterType(t))
	}
	if fl.changed("assignee") {
		a := fl.str("assignee")
		f.assignee = &a
	}
	f.unassigned = fl.boolean("unassigned") || fl.boolean("no-assignee")
	f.labels = fl.list("label")
	f.labelsAny = fl.list("label-any")
	f.excludeLabels = fl.list("exclude-label")
	f.hasMetadataKey = fl.str("has-metadata-key")
	f.labelPattern = fl.str("label-pattern")
	f.labelRegex = fl.str("label-regex")
	if f.labelRegex != "" {
		if _, err := regexp.Compile(f.labelRegex); err != nil {
			return nil, fmt.Errorf("invalid --label-regex: %w", err)
		}
	}
	for _, kvs := range fl.list("metadata-field") {
		k, v, ok := strings.Cut(kvs, "=")
		if !ok {
			return nil, fmt.Errorf("invalid --metadata-field %q (want key=value)", kvs)
		}
		if f.metadataFields == nil {
			f.metadataFields = map[string]string{}
		}
		f.metadataFields[k] = v
	}
	if fl.changed("parent") && fl.str("parent") != "" {
		p, err := inv.resolve(fl.str("parent"))
		if err != nil {
			return nil, fmt.Errorf("resolving parent %s: %w", fl.str("parent"), err)
		}
		f.within = inv.db.descendants(p.ID)
	}
	return f, nil
}

func normalizeFilterType(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	switch t {
	case "mr":
		return "merge-request"
	case "mol":
		return "molecule"
	}
	n, _ := normalizeType(t)
	return n
}

func (f *issueFilter) match(is *issue) bool {
	if len(f.types) > 0 && !containsStr(f.types, is.IssueType) {
		return false
	}
	if containsStr(f.excludeTypes, is.IssueType) {
		return false
	}
	if f.priority != nil && is.Priority != *f.priority {
		return false
	}
	if f.assignee != nil && is.Assignee != *f.assignee {
		return false
	}
	if f.unassigned && is.Assignee != "" {
		return false
	}
	for _, l := range f.labels {
		if !containsStr(is.Labels, l) {
			return false
		}
	}
	if len(f.labelsAny) > 0 {
		hit := false
		for _, l := range f.labelsAny {
			hit = hit || containsStr(is.Labels, l)
		}
		if !hit {
			return false
		}
	}
	for _, l := range f.excludeLabels {
		if containsStr(is.Labels, l) {
			return false
		}
	}
	if f.labelPattern != "" {
		hit := false
		for _, l := range is.Labels {
			if ok, _ := filepath.Match(f.labelPattern, l); ok {
				hit = true
			}
		}
		if !hit {
			return false
		}
	}
	if f.labelRegex != "" {
		re, err := regexp.Compile(f.labelRegex)
		hit := false
		for _, l := range is.Labels {
			if err == nil && re.MatchString(l) {
				hit = true
			}
		}
		if !hit {
			return false
		}
	}
	if f.hasMetadataKey != "" || len(f.metadataFields) > 0 {
		m := map[string]any{}
		_ = json.Unmarshal(is.Metadata, &m)
		if _, ok := m[f.hasMetadataKey]; f.hasMetadataKey != "" && !ok {
			return false
		}
		for k, want := range f.metadataFields {
			v, ok := m[k]
			if !ok {
				return false
			}
			got, isStr := v.(string)
			if !isStr {
				b, _ := json.Marshal(v)
				got = string(b)
			}
			if got != want {
				return false
			}
		}
	}
	if f.within != nil && !f.within[is.ID] {
		return false
	}
	return true
}

// readyIssues returns the ready issues that pass f, sorted by policy.
func (inv *invocation) readyIssues(f *issueFilter, policy string, includeDeferred bool) []*issue {
	var out []*issue
	for _, is := range inv.db.Issues {
		if inv.db.isReady(is, inv.now, includeDeferred) && f.match(is) {
			out = append(out, is)
		}
	}
	switch policy {
	case "oldest":
		sortOldest(out)
	case "hybrid":
		sortHybrid(out, inv.now)
	default:
		sortByPriority(out)
	}
	return out
}

func runReady(inv *invocation) int {
	fl := inv.fl
	policy := fl.str("sort")
	if policy != "priority" && policy != "hybrid" && policy != "oldest" && policy != "" {
		return inv.failJSON(false, fmt.Sprintf("invalid sort policy '%s'. Valid values: hybrid, priority, oldest", policy))
	}
	f, err := inv.newFilter()
	if err != nil {
		return inv.failJSON(false, err.Error())
	}
	if fl.changed("priority") {
		p := fl.integer("priority")
		f.priority = &p
	}
	list := inv.readyIssues(f, policy, fl.boolean("include-deferred"))
	if fl.boolean("claim") {
		return inv.readyClaim(list)
	}
	total := len(list)
	if limit := fl.integer("limit"); limit > 0 && total > limit {
		list = list[:limit]
		if !inv.quiet {
			fmt.Fprintf(inv.stderr, "Showing %d of %d ready issues. Use --limit 0 for all, or --limit N to raise the cap.\n", len(list), total)
		}
	}
	if fl.boolean("explain") {
		return inv.readyExplain(list)
	}
	if inv.jsonOut {
		arr := make([]obj, len(list))
		for i, is := range list {
			arr[i] = inv.db.listObj(is, false)
		}
		inv.printJSON(arr)
		if len(arr) == 0 {
			fmt.Fprintln(inv.stdout)
		}
		return 0
	}
	if len(list) == 0 {
		open := 0
		for _, is := range inv.db.Issues {
			if is.Status == statusOpen || is.Status == statusInProgress {
				open++
			}
		}
		if open > 0 {
			fmt.Fprint(inv.stdout, "\n✨ No ready work found (all issues have blocking dependencies)\n\n")
		} else {
			fmt.Fprint(inv.stdout, "\n✨ No open issues\n\n")
		}
		return 0
	}
	var b strings.Builder
	if fl.boolean("plain") {
		fmt.Fprintf(&b, "\n📋 Ready work (%d issues with no active blockers):\n\n", len(list))
		for i, is := range list {
			fmt.Fprintf(&b, "%d. [P%d] [%s] %s: %s\n", i+1, is.Priority, is.IssueType, is.ID, is.Title)
			if is.EstimatedMinutes != nil {
				fmt.Fprintf(&b, "   Estimate: %d min\n", *is.EstimatedMinutes)
			}
			if is.Assignee != "" {
				fmt.Fprintf(&b, "   Assignee: %s\n", is.Assignee)
			}
		}
		b.WriteString("\n")
		fmt.Fprint(inv.stdout, b.String())
		return 0
	}
	for _, is := range list {
		suffix := ""
		if p := inv.db.get(inv.db.parentOf(is.ID)); p != nil {
			suffix = " ← " + p.Title
		}
		fmt.Fprintf(&b, "%s %s ● P%d %s%s%s\n", statusIcon(is.Status), is.ID, is.Priority, typeTag(is.IssueType), is.Title, suffix)
	}
	fmt.Fprintf(&b, "\n%s\nReady: %d issues with no active blockers\n\n%s", strings.Repeat("-", 80), len(list), statusLegend)
	fmt.Fprint(inv.stdout, b.String())
	return 0
}

// readyClaim atomically claims the first ready issue that has no
// assignee: real bd skips issues assigned to anyone, the actor included.
func (inv *invocation) readyClaim(list []*issue) int {
	actor := inv.actor()
	for _, is := range list {
		if is.Assignee != "" {
			continue
		}
		now := roundTime(inv.now)
		old, started := is.Status, is.StartedAt
		is.Status, is.Assignee, is.UpdatedAt = statusInProgress, actor, now
		inv.applyStatusChange(is, old, now)
		if started != nil {
			is.StartedAt = started
		}
		inv.markDirty("claim " + is.ID)
		inv.claimed = append(inv.claimed, is.ID)
		inv.touched = is.ID
		if inv.jsonOut {
			inv.printJSON([]obj{inv.db.listObj(is, false)})
		} else if !inv.quiet {
			fmt.Fprintf(inv.stdout, "✓ Claimed issue: %s — %s\n", is.ID, is.Title)
		}
		return 0
	}
	if inv.jsonOut {
		inv.printJSON([]obj{})
		fmt.Fprintln(inv.stdout)
		if inv.deviates(DeviateExitCode) {
			return 1
		}
		return 0
	}
	fmt.Fprint(inv.stdout, "\n○ No ready work to claim\n\n")
	return 0
}

// readyExplain prints `ready --explain --json`.
func (inv *invocation) readyExplain(list []*issue) int {
	db := inv.db
	ready := []obj{}
	for _, is := range list {
		deps, dependents := db.blockingCounts(is.ID)
		o := baseObj(is).add("dependency_count", deps).add("dependent_count", dependents)
		if p := db.parentOf(is.ID); p != "" {
			o = o.add("parent", p)
		}
		resolved := db.closedBlockers(is.ID)
		if len(resolved) > 0 {
			o = o.add("reason", "all blockers resolved").add("resolved_blockers", resolved)
		} else {
			o = o.add("reason", "no blocking dependencies").add("resolved_blockers", nil)
		}
		ready = append(ready, o.sorted())
	}
	blocked := []obj{}
	for _, is := range inv.blockedIssues(nil) {
		var by []obj
		for _, id := range db.openBlockers(is.ID) {
			t := db.get(id)
			by = append(by, obj{{"id", t.ID}, {"priority", t.Priority}, {"status", t.Status}, {"title", t.Title}})
		}
		blocked = append(blocked, baseObj(is).add("blocked_by", by).add("blocked_by_count", len(by)).sorted())
	}
	if !inv.jsonOut {
		return inv.fail("ready --explain without --json is not implemented by the bd stand-in")
	}
	inv.printJSON(obj{
		{"blocked", blocked},
		{"ready", ready},
		{"schema_version", 1},
		{"summary", obj{{"cycle_count", 0}, {"total_blocked", len(blocked)}, {"total_ready", len(ready)}}},
	})
	return 0
}

// blockedIssues returns unfinished issues waiting on open blockers.
func (inv *invocation) blockedIssues(within map[string]bool) []*issue {
	var out []*issue
	for _, is := range inv.db.Issues {
		if inv.db.isBlocked(is) && (within == nil || within[is.ID]) {
			out = append(out, is)
		}
	}
	sortByPriority(out)
	return out
}

func runBlocked(inv *invocation) int {
	var within map[string]bool
	if p := inv.fl.str("parent"); p != "" {
		is, err := inv.resolve(p)
		if err != nil {
			return inv.failJSON(false, fmt.Sprintf("resolving parent %s: %v", p, err))
		}
		within = inv.db.descendants(is.ID)
	}
	list := inv.blockedIssues(within)
	if inv.jsonOut {
		arr := make([]obj, len(list))
		for i, is := range list {
			by := inv.db.openBlockers(is.ID)
			arr[i] = baseObj(is).add("blocked_by_count", len(by)).add("blocked_by", by)
		}
		inv.printJSON(arr)
		return 0
	}
	if len(list) == 0 {
		fmt.Fprint(inv.stdout, "\n✨ No blocked issues\n\n")
		return 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n🚫 Blocked issues (%d):\n\n", len(list))
	for _, is := range list {
		by := inv.db.openBlockers(is.ID)
		fmt.Fprintf(&b, "[● P%d] %s: %s\n  Blocked by %d open dependencies: %v\n\n", is.Priority, is.ID, is.Title, len(by), by)
	}
	fmt.Fprint(inv.stdout, b.String())
	return 0
}

// parseDateFlag parses list's date filters.
func parseDateFlag(s string, now time.Time) (time.Time, error) {
	return parseWhen(s, now)
}

func runList(inv *invocation) int {
	fl := inv.fl
	f, err := inv.newFilter()
	if err != nil {
		return inv.failJSON(false, err.Error())
	}
	if fl.changed("parent") && fl.str("parent") != "" {
		p, _ := inv.resolve(fl.str("parent"))
		f.within = map[string]bool{}
		for _, c := range inv.db.childrenOf(p.ID) {
			f.within[c] = true
		}
	}
	if fl.changed("priority") {
		p, err := parsePriority(fl.str("priority"))
		if err != nil {
			return inv.failJSON(false, err.Error())
		}
		f.priority = &p
	}
	prioMin, prioMax := 0, 4
	for _, pm := range []struct {
		flag string
		dst  *int
	}{{"priority-min", &prioMin}, {"priority-max", &prioMax}} {
		if fl.changed(pm.flag) {
			p, err := parsePriority(fl.str(pm.flag))
			if err != nil {
				return inv.failJSON(false, err.Error())
			}
			*pm.dst = p
		}
	}
	var statuses []string
	if fl.changed("status") {
		for _, s := range strings.Split(fl.str("status"), ",") {
			if s = strings.TrimSpace(s); s != "" {
				statuses = append(statuses, s)
			}
		}
	}
	var ids []string
	if fl.changed("id") {
		for _, id := range strings.Split(fl.str("id"), ",") {
			if is, err := inv.resolve(id); err == nil {
				ids = append(ids, is.ID)
			}
		}
	}
	dates := map[string]time.Time{}
	for _, name := range []string{"created-after", "created-before", "updated-after", "updated-before"} {
		if v := fl.str(name); v != "" {
			t, err := parseDateFlag(v, inv.now)
			if err != nil {
				return inv.failJSON(false, fmt.Sprintf("invalid --%s: %v", name, err))
			}
			dates[name] = t
		}
	}
	contains := func(hay, needle string) bool {
		return strings.Contains(strings.ToLower(hay), strings.ToLower(needle))
	}
	var list []*issue
	for _, is := range inv.db.Issues {
		switch {
		case fl.boolean("ready"):
			if !inv.db.isReady(is, inv.now, false) {
				continue
			}
		case len(statuses) > 0:
			if !containsStr(statuses, is.Status) {
				continue
			}
		case !fl.boolean("all") && is.Status == statusClosed:
			continue
		}
		if !f.match(is) || is.Priority < prioMin || is.Priority > prioMax {
			continue
		}
		if len(ids) > 0 && !containsStr(ids, is.ID) {
			continue
		}
		if fl.boolean("no-parent") && inv.db.parentOf(is.ID) != "" {
			continue
		}
		if fl.boolean("no-labels") && len(is.Labels) > 0 {
			continue
		}
		if fl.boolean("pinned") && is.Status != statusPinned || fl.boolean("no-pinned") && is.Status == statusPinned {
			continue
		}
		if fl.boolean("deferred") && is.DeferUntil == nil {
			continue
		}
		if fl.boolean("overdue") && (is.DueAt == nil || !is.DueAt.Before(inv.now) || is.Status == statusClosed) {
			continue
		}
		if fl.boolean("empty-description") && is.Description != "" {
			continue
		}
		if v := fl.str("spec"); v != "" && !strings.HasPrefix(is.SpecID, v) {
			continue
		}
		if v := fl.str("title"); v != "" && !contains(is.Title, v) {
			continue
		}
		if v := fl.str("title-contains"); v != "" && !contains(is.Title, v) {
			continue
		}
		if v := fl.str("desc-contains"); v != "" && !contains(is.Description, v) {
			continue
		}
		if v := fl.str("notes-contains"); v != "" && !contains(is.Notes, v) {
			continue
		}
		if t, ok := dates["created-after"]; ok && !is.CreatedAt.After(t) {
			continue
		}
		if t, ok := dates["created-before"]; ok && !is.CreatedAt.Before(t) {
			continue
		}
		if t, ok := dates["updated-after"]; ok && !is.UpdatedAt.After(t) {
			continue
		}
		if t, ok := dates["updated-before"]; ok && !is.UpdatedAt.Before(t) {
			continue
		}
		list = append(list, is)
	}
	if fl.boolean("ready") && !fl.changed("sort") {
		sortHybrid(list, inv.now)
	} else if err := sortList(list, fl.str("sort")); err != nil {
		return inv.failJSON(false, err.Error())
	}
	if fl.boolean("reverse") {
		for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
			list[i], list[j] = list[j], list[i]
		}
	}
	if limit := fl.integer("limit"); limit > 0 && len(list) > limit {
		list = list[:limit]
	}
	if inv.jsonOut {
		arr := make([]obj, len(list))
		for i, is := range list {
			o := inv.db.listObj(is, false)
			if fl.boolean("skip-labels") {
				o = o.without("labels")
			}
			arr[i] = o
		}
		inv.printJSON(arr)
		return 0
	}
	if len(list) == 0 {
		fmt.Fprintln(inv.stdout, "No issues found.")
		return 0
	}
	inv.printListText(list, !fl.boolean("flat") && fl.boolean("tree"))
	return 0
}

// sortList applies `list --sort`.
func sortList(list []*issue, field string) error {
	less := map[string]func(a, b *issue) bool{
		"created":  func(a, b *issue) bool { return a.CreatedAt.After(b.CreatedAt) },
		"updated":  func(a, b *issue) bool { return a.UpdatedAt.After(b.UpdatedAt) },
		"closed":   func(a, b *issue) bool { return timeOf(a.ClosedAt).After(timeOf(b.ClosedAt)) },
		"status":   func(a, b *issue) bool { return a.Status < b.Status },
		"id":       func(a, b *issue) bool { return a.ID < b.ID },
		"title":    func(a, b *issue) bool { return strings.ToLower(a.Title) < strings.ToLower(b.Title) },
		"type":     func(a, b *issue) bool { return a.IssueType < b.IssueType },
		"assignee": func(a, b *issue) bool { return a.Assignee < b.Assignee },
	}
	if field == "" || field == "priority" {
		sortByPriority(list)
		return nil
	}
	fn, ok := less[field]
	if !ok {
		return fmt.Errorf("invalid sort field %q (valid: priority, created, updated, closed, status, id, title, type, assignee)", field)
	}
	sortByPriority(list)
	sort.SliceStable(list, func(i, j int) bool { return fn(list[i], list[j]) })
	return nil
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// printListText prints `bd list`'s human-readable tree (or flat list).
func (inv *invocation) printListText(list []*issue, tree bool) {
	db := inv.db
	shown := map[string]bool{}
	for _, is := range list {
		shown[is.ID] = true
	}
	children := map[string][]*issue{}
	var roots []*issue
	for _, is := range list {
		if p := db.parentOf(is.ID); tree && p != "" && shown[p] {
			children[p] = append(children[p], is)
		} else {
			roots = append(roots, is)
		}
	}
	sortByPriorityThenID(roots)
	var b strings.Builder
	var walk func(is *issue, prefix, branch string)
	walk = func(is *issue, prefix, branch string) {
		fmt.Fprintf(&b, "%s%s%s %s ● P%d %s%s\n", prefix, branch, statusIcon(is.Status), is.ID, is.Priority, typeTag(is.IssueType), is.Title)
		kids := children[is.ID]
		sortByPriorityThenID(kids)
		next := prefix
		switch branch {
		case "├── ":
			next += "│   "
		case "└── ":
			next += "    "
		}
		for i, k := range kids {
			br := "├── "
			if i == len(kids)-1 {
				br = "└── "
			}
			walk(k, next, br)
		}
	}
	for _, r := range roots {
		walk(r, "", "")
	}
	open, inProgress := 0, 0
	for _, is := range list {
		switch is.Status {
		case statusOpen:
			open++
		case statusInProgress:
			inProgress++
		}
	}
	fmt.Fprintf(&b, "\n%s\nTotal: %d issues (%d open, %d in progress)\n\n%s", strings.Repeat("-", 80), len(list), open, inProgress, statusLegend)
	fmt.Fprint(inv.stdout, b.String())
}

func runShow(inv *invocation) int {
	fl := inv.fl
	refs := append(inv.idsOrLastTouched(), fl.strAll("id")...)
	if len(refs) == 0 {
		return inv.argsError("requires at least 1 arg(s), only received 0")
	}
	var found []*issue
	for _, ref := range refs {
		is, err := inv.resolve(ref)
		if err != nil {
			fmt.Fprintf(inv.stderr, "Error fetching %s: %v\n", ref, err)
			continue
		}
		found = append(found, is)
	}
	if len(found) == 0 {
		if inv.jsonOut {
			inv.writeJSON(inv.stdout, obj{{"error", "no issues found matching the provided IDs"}, {"schema_version", 1}})
		}
		return 1
	}
	inv.touched = found[len(found)-1].ID
	if inv.jsonOut {
		arr := make([]obj, len(found))
		for i, is := range found {
			arr[i] = inv.db.showObj(is, fl.boolean("include-comments"), fl.boolean("include-dependents"))
		}
		inv.printJSON(arr)
		return 0
	}
	for i, is := range found {
		if fl.boolean("short") {
			fmt.Fprintf(inv.stdout, "%s %s ● P%d %s%s\n", statusIcon(is.Status), is.ID, is.Priority, typeTag(is.IssueType), is.Title)
			continue
		}
		if i > 0 {
			fmt.Fprintln(inv.stdout)
		}
		fmt.Fprint(inv.stdout, inv.showText(is, fl.boolean("local-time")))
	}
	return 0
}

// showText renders `bd show`'s human-readable form.
func (inv *invocation) showText(is *issue, local bool) string {
	db := inv.db
	day := func(t time.Time) string {
		if local {
			t = t.Local()
		}
		return t.UTC().Format("2006-01-02")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s · %s   [● P%d · %s]\n", statusIcon(is.Status), is.ID, is.Title, is.Priority, strings.ToUpper(is.Status))
	line := "Owner: " + is.CreatedBy
	if is.Assignee != "" {
		line += " · Assignee: " + is.Assignee
	}
	fmt.Fprintf(&b, "%s · Type: %s\n", line, is.IssueType)
	if is.StartedAt != nil {
		fmt.Fprintf(&b, "Created: %s · Started: %s · Updated: %s\n", day(is.CreatedAt), day(*is.StartedAt), day(is.UpdatedAt))
	} else {
		fmt.Fprintf(&b, "Created: %s · Updated: %s\n", day(is.CreatedAt), day(is.UpdatedAt))
	}
	if is.ClosedAt != nil {
		fmt.Fprintf(&b, "Closed: %s · Reason: %s\n", day(*is.ClosedAt), is.CloseReason)
	}
	section := func(title, body string) {
		if body != "" {
			fmt.Fprintf(&b, "\n%s\n%s\n", title, body)
		}
	}
	if is.Description == "" {
		b.WriteString("\nDESCRIPTION\n  (none)\n") // bd names the empty description
	}
	section("DESCRIPTION", is.Description)
	section("DESIGN", is.Design)
	section("NOTES", is.Notes)
	section("ACCEPTANCE CRITERIA", is.AcceptanceCriteria)
	if len(is.Labels) > 0 {
		fmt.Fprintf(&b, "\nLABELS: %s\n", strings.Join(is.Labels, ", "))
	}
	ref := func(arrow string, t *issue) string {
		epic := ""
		if t.IssueType == "epic" {
			epic = "(EPIC) "
		}
		return fmt.Sprintf("  %s %s %s: %s%s ● P%d\n", arrow, statusIcon(t.Status), t.ID, epic, t.Title, t.Priority)
	}
	var parent, dependsOn, blocks, kids strings.Builder
	for _, d := range db.depsOf(is.ID) {
		if t := db.get(d.DependsOnID); t != nil {
			if d.Type == depParentChild {
				parent.WriteString(ref("↑", t))
			} else {
				dependsOn.WriteString(ref("→", t))
			}
		}
	}
	for _, d := range db.dependentsOf(is.ID) {
		if t := db.get(d.IssueID); t != nil {
			if d.Type == depParentChild {
				kids.WriteString(ref("↳", t))
			} else {
				blocks.WriteString(ref("←", t))
			}
		}
	}
	for _, s := range []struct {
		title string
		body  *strings.Builder
	}{{"PARENT", &parent}, {"DEPENDS ON", &dependsOn}, {"BLOCKS", &blocks}, {"CHILDREN", &kids}} {
		if s.body.Len() > 0 {
			fmt.Fprintf(&b, "\n%s\n%s", s.title, s.body.String())
		}
	}
	b.WriteString("\n")
	return b.String()
}

func runStats(inv *invocation) int {
	db := inv.db
	actor := ""
	if inv.fl.boolean("assigned") {
		actor = inv.actor()
	}
	var total, open, inProgress, closed, deferred, pinned, blocked, ready, eligible int
	var leadHours float64
	for _, is := range db.Issues {
		if actor != "" && is.Assignee != actor {
			continue
		}
		total++
		switch is.Status {
		case statusOpen:
			open++
		case statusInProgress:
			inProgress++
		case statusClosed:
			closed++
			if is.ClosedAt != nil {
				leadHours += is.ClosedAt.Sub(is.CreatedAt).Hours()
			}
		case statusDeferred:
			deferred++
		case statusPinned:
			pinned++
		}
		if db.isBlocked(is) {
			blocked++
		}
		if db.isReady(is, inv.now, false) {
			ready++
		}
		if is.IssueType == "epic" && is.Status != statusClosed {
			kids := db.childrenOf(is.ID)
			all := len(kids) > 0
			for _, k := range kids {
				if c := db.get(k); c == nil || c.Status != statusClosed {
					all = false
				}
			}
			if all {
				eligible++
			}
		}
	}
	avg := 0.0
	if closed > 0 {
		avg = leadHours / float64(closed)
	}
	if inv.jsonOut {
		inv.printJSON(obj{{"schema_version", 1}, {"summary", obj{
			{"average_lead_time_hours", avg},
			{"blocked_issues", blocked},
			{"closed_issues", closed},
			{"deferred_issues", deferred},
			{"epics_eligible_for_closure", eligible},
			{"in_progress_issues", inProgress},
			{"open_issues", open},
			{"pinned_issues", pinned},
			{"ready_issues", ready},
			{"total_issues", total},
		}}})
		return 0
	}
	fmt.Fprintf(inv.stdout, "\n📊 Issue Database Status\n\nSummary:\n"+
		"  Total Issues:           %d\n  Open:                   %d\n  In Progress:            %d\n"+
		"  Blocked:                %d\n  Closed:                 %d\n  Ready to Work:          %d\n"+
		"  Deferred:               %d\n  Pinned:                 %d\n\n"+
		"For more details, use 'bd list' to see individual issues.\n\n",
		total, open, inProgress, blocked, closed, ready, deferred, pinned)
	return 0
}

func runExport(inv *invocation) int {
	var b strings.Builder
	for _, is := range inv.db.sortedIssues() {
		line, err := json.Marshal(append(obj{{"_type", "issue"}}, inv.db.listObj(is, true)...))
		if err != nil {
			return inv.fail(err.Error())
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if out := inv.fl.str("output"); out != "" {
		if !filepath.IsAbs(out) {
			out = filepath.Join(inv.cwd, out)
		}
		if err := atomicfile.Write(out, []byte(b.String()), 0o644); err != nil {
			return inv.fail(err.Error())
		}
		if !inv.quiet {
			fmt.Fprintf(inv.stderr, "Exported %s issues to %s\n", strconv.Itoa(len(inv.db.Issues)), out)
		}
		return 0
	}
	fmt.Fprint(inv.stdout, b.String())
	return 0
}
