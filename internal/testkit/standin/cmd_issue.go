package standin

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// argsError prints a cobra argument-validation error with the usage.
func (inv *invocation) argsError(msg string) int {
	fmt.Fprintf(inv.stderr, "Error: %s\n%s\n", msg, inv.cmd.usage())
	return 1
}

// logInteraction appends a field_change entry to interactions.jsonl.
func (inv *invocation) logInteraction(issueID, field, oldValue, newValue, reason string) {
	var b [4]byte
	_, _ = io.ReadFull(inv.rand(), b[:])
	extra := obj{{"field", field}, {"old_value", oldValue}, {"new_value", newValue}}
	if reason != "" {
		extra = extra.add("reason", reason)
	}
	line, err := json.Marshal(obj{
		{"id", "int-" + hex.EncodeToString(b[:])},
		{"kind", "field_change"},
		{"created_at", inv.now.UTC()},
		{"actor", inv.actor()},
		{"issue_id", issueID},
		{"extra", extra},
	})
	if err == nil && inv.deferLog {
		inv.pendingLog = append(inv.pendingLog, line)
		return
	}
	if err == nil {
		if err := inv.ws.appendInteraction(line); err != nil {
			fmt.Fprintf(inv.stderr, "warning: %v\n", err)
		}
	}
}

// readText reads a file argument, "-" meaning stdin.
func (inv *invocation) readText(path string) (string, error) {
	if path == "-" {
		b, err := io.ReadAll(inv.stdin)
		if err != nil {
			return "", fmt.Errorf("read stdin: %w", err)
		}
		return string(b), nil
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(inv.cwd, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return string(b), nil
}

// textFlag returns a text field from --name, --name-file or --stdin.
func (inv *invocation) textFlag(name, fileFlag string, stdinOK bool) (string, bool, error) {
	fl := inv.fl
	switch {
	case fileFlag != "" && fl.changed(fileFlag):
		s, err := inv.readText(fl.str(fileFlag))
		return strings.TrimRight(s, "\n"), true, err
	case stdinOK && fl.changed("stdin") && fl.boolean("stdin"):
		s, err := inv.readText("-")
		return strings.TrimRight(s, "\n"), true, err
	case fl.changed(name):
		return fl.str(name), true, nil
	}
	return "", false, nil
}

// parseMetadata accepts a JSON object or @file.json.
func (inv *invocation) parseMetadata(s string) (json.RawMessage, error) {
	if strings.HasPrefix(s, "@") {
		t, err := inv.readText(s[1:])
		if err != nil {
			return nil, err
		}
		s = t
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("metadata must be a valid JSON object: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return b, nil
}

func runCreate(inv *invocation) int {
	fl := inv.fl
	if len(inv.args) > 1 {
		return inv.argsError(fmt.Sprintf("accepts at most 1 arg(s), received %d", len(inv.args)))
	}
	title := fl.str("title")
	if len(inv.args) == 1 {
		if fl.changed("title") && title != inv.args[0] {
			return inv.failJSON(false, fmt.Sprintf("cannot specify both title as positional argument (%q) and --title flag (%q)", inv.args[0], title))
		}
		title = inv.args[0]
	}
	if title == "" && !fl.changed("title") {
		return inv.failJSON(false, "title required (or use --file to create from markdown)")
	}
	title = strings.TrimSpace(title)
	if title == "" {
		return inv.failJSON(false, "title cannot be empty")
	}
	silent := fl.boolean("silent")
	if testTitle.MatchString(strings.ToLower(title)) && !silent && !inv.quiet && len(inv.db.Issues) >= 5 {
		fmt.Fprintf(inv.stderr, "⚠ Creating test issue in production database\n  Title: %q appears to be test data\n  Recommendation: Use isolated test database with --db\n    bd --db /tmp/test-beads create %q\n", title, title)
	}
	prio, err := parsePriority(fl.str("priority"))
	if err != nil {
		return inv.failJSON(false, err.Error())
	}
	typ, ok := normalizeType(fl.str("type"))
	if !ok {
		return inv.failJSON(false, "validation failed for issue : invalid issue type: "+typ)
	}
	desc, _, err := inv.textFlag("description", "body-file", true)
	if err != nil {
		return inv.failJSON(false, err.Error())
	}
	for _, extra := range []struct{ flag, heading string }{{"skills", "## Required Skills\n"}, {"context", "## Context\n"}} {
		if v := fl.str(extra.flag); v != "" {
			if desc != "" {
				desc += "\n\n"
			}
			desc += extra.heading + v
		}
	}
	design, _, err := inv.textFlag("design", "design-file", false)
	if err != nil {
		return inv.failJSON(false, err.Error())
	}
	notes := fl.str("notes")
	if a := fl.str("append-notes"); a != "" {
		if notes != "" {
			notes += "\n"
		}
		notes += a
	}
	is := &issue{
		Title: title, Description: desc, Design: design, AcceptanceCriteria: fl.str("acceptance"),
		Notes: notes, SpecID: fl.str("spec-id"), Status: statusOpen, Priority: prio, IssueType: typ,
		Assignee: fl.str("assignee"), ExternalRef: fl.str("external-ref"),
		CreatedAt: inv.now.UTC(), UpdatedAt: inv.now.UTC(), CreatedBy: inv.actor(),
	}
	_, is.Owner = inv.gitUser()
	if fl.changed("estimate") {
		n := fl.integer("estimate")
		if n < 0 {
			return inv.failJSON(false, "estimate cannot be negative")
		}
		is.EstimatedMinutes = &n
	}
	if v := fl.str("metadata"); v != "" {
		if is.Metadata, err = inv.parseMetadata(v); err != nil {
			return inv.failJSON(false, err.Error())
		}
	}
	if v := fl.str("due"); v != "" {
		t, err := parseWhen(v, inv.now)
		if err != nil {
			return inv.failJSON(false, fmt.Sprintf("invalid --due: %v", err))
		}
		t = t.UTC()
		is.DueAt = &t
	}
	if v := fl.str("defer"); v != "" {
		t, err := parseWhen(v, inv.now)
		if err != nil {
			return inv.failJSON(false, fmt.Sprintf("invalid --defer: %v", err))
		}
		t = t.UTC()
		is.DeferUntil = &t
		is.Status = statusDeferred
	}
	labels := fl.list("labels")

	// Choose the id.
	var parent *issue
	switch {
	case fl.str("id") != "":
		id := fl.str("id")
		if !strings.HasPrefix(id, inv.db.Prefix+"-") && !fl.boolean("force") {
			return inv.failJSON(false, fmt.Sprintf("prefix mismatch: ID %q does not match database prefix %q (use --force to override)", id, inv.db.Prefix))
		}
		if inv.db.get(id) != nil {
			return inv.failJSON(false, fmt.Sprintf("issue %s already exists", id))
		}
		is.ID = id
	case fl.str("parent") != "":
		p, err := inv.resolve(fl.str("parent"))
		if err != nil {
			return inv.failJSON(false, fmt.Sprintf("parent issue %s not found: %v", fl.str("parent"), err))
		}
		parent = p
		is.ID = fmt.Sprintf("%s.%d", p.ID, inv.nextChild(p.ID))
		if !fl.boolean("no-inherit-labels") {
			labels = append(labels, p.Labels...)
		}
	default:
		is.ID = inv.newIssueID(title, desc)
	}
	is.Labels = uniqueSorted(labels)

	// Dependencies from --deps ("type:id" or "id").
	type newDep struct{ typ, target string }
	var deps []newDep
	for _, d := range fl.list("deps") {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		t, target := depBlocks, d
		if k, rest, ok := strings.Cut(d, ":"); ok && containsStr(depTypes, k) {
			t, target = k, rest
		}
		deps = append(deps, newDep{t, target})
	}
	created := *is
	stored := is
	stored.CreatedAt, stored.UpdatedAt = roundTime(is.CreatedAt), roundTime(is.UpdatedAt)
	stored.DueAt, stored.DeferUntil = roundPtr(is.DueAt), roundPtr(is.DeferUntil)
	inv.db.add(stored)
	if parent != nil {
		inv.db.Deps = append(inv.db.Deps, &dep{IssueID: stored.ID, DependsOnID: parent.ID, Type: depParentChild, CreatedAt: roundTime(inv.now), CreatedBy: stored.CreatedBy})
	}
	for _, d := range deps {
		target, err := inv.resolve(d.target)
		if err != nil {
			fmt.Fprintf(inv.stderr, "Warning: failed to add dependency %s -> %s: %v\n", stored.ID, d.target, err)
			continue
		}
		if inv.db.findDep(stored.ID, target.ID) == nil {
			inv.db.Deps = append(inv.db.Deps, &dep{IssueID: stored.ID, DependsOnID: target.ID, Type: d.typ, CreatedAt: roundTime(inv.now), CreatedBy: stored.CreatedBy})
		}
	}
	inv.markDirty("create " + stored.ID)
	inv.touched = stored.ID

	switch {
	case inv.jsonOut:
		inv.printJSON(baseObj(&created).add("schema_version", 1).sorted())
	case silent:
		fmt.Fprintln(inv.stdout, stored.ID)
	case inv.quiet:
	default:
		fmt.Fprintf(inv.stdout, "✓ Created issue: %s — %s\n  Priority: P%d\n  Status: %s\n", stored.ID, stored.Title, stored.Priority, stored.Status)
	}
	return 0
}

// nextChild returns the next free child number under parent.
func (inv *invocation) nextChild(parent string) int {
	max := 0
	for _, is := range inv.db.Issues {
		rest, ok := strings.CutPrefix(is.ID, parent+".")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(strings.SplitN(rest, ".", 2)[0]); err == nil && n > max {
			max = n
		}
	}
	return max + 1
}

// newIssueID returns "<prefix>-" plus 3 base36 hash characters, growing
// the hash when ids collide (or the runner's NewID proposal).
func (inv *invocation) newIssueID(title, desc string) string {
	if inv.r.NewID != nil {
		if id := inv.r.NewID(title); id != "" && inv.db.get(id) == nil {
			return id
		}
	}
	actor := inv.actor()
	for length := 3; ; length++ {
		for nonce := 0; nonce < 10; nonce++ {
			id := inv.db.Prefix + "-" + hashID(title, desc, actor, inv.now, nonce, length)
			if inv.db.get(id) == nil {
				return id
			}
		}
	}
}

// updateFlags are the update flags that change something.
var updateFlags = []string{"acceptance", "add-label", "append-notes", "assignee", "body-file", "claim", "defer",
	"description", "design", "design-file", "due", "estimate", "external-ref", "metadata", "notes", "parent",
	"priority", "remove-label", "session", "set-labels", "set-metadata", "spec-id", "status", "stdin", "title",
	"type", "unset-metadata", "clear-notes"}

func runUpdate(inv *invocation) int {
	fl := inv.fl
	hasChange := false
	for _, f := range updateFlags {
		if fl.changed(f) {
			hasChange = true
		}
	}
	if !hasChange {
		fmt.Fprintln(inv.stdout, "No updates specified")
		return 0
	}
	var prio int
	if fl.changed("priority") {
		p, err := parsePriority(fl.str("priority"))
		if err != nil {
			return inv.failJSON(true, err.Error())
		}
		prio = p
	}
	status := fl.str("status")
	if fl.changed("status") && !validStatus(status) {
		return inv.failJSON(true, fmt.Sprintf("invalid status %q (built-in: open, in_progress, blocked, deferred, closed, pinned, hooked; or configure custom statuses via 'bd config set status.custom')", status))
	}
	desc, descSet, err := inv.textFlag("description", "body-file", true)
	if err != nil {
		return inv.failJSON(true, err.Error())
	}
	design, designSet, err := inv.textFlag("design", "design-file", false)
	if err != nil {
		return inv.failJSON(true, err.Error())
	}
	var meta json.RawMessage
	if fl.changed("metadata") {
		if meta, err = inv.parseMetadata(fl.str("metadata")); err != nil {
			return inv.failJSON(true, err.Error())
		}
	}
	var deferAt, dueAt *time.Time
	for _, w := range []struct {
		flag string
		dst  **time.Time
	}{{"defer", &deferAt}, {"due", &dueAt}} {
		if v := fl.str(w.flag); v != "" {
			t, err := parseWhen(v, inv.now)
			if err != nil {
				return inv.failJSON(true, fmt.Sprintf("invalid --%s: %v", w.flag, err))
			}
			t = roundTime(t)
			*w.dst = &t
		}
	}
	ids := inv.idsOrLastTouched()
	if len(ids) == 0 {
		return inv.fail("no issue ID given and no last touched issue")
	}
	actor := inv.actor()
	now := roundTime(inv.now)
	failed, stale := false, false
	var updated []*issue
	for _, ref := range ids {
		is, err := inv.resolve(ref)
		if err != nil {
			fmt.Fprintf(inv.stderr, "Error resolving %s: %v\n", ref, err)
			failed = true
			continue
		}
		if fl.changed("type") {
			t, ok := normalizeType(fl.str("type"))
			if !ok {
				fmt.Fprintf(inv.stderr, "Error updating %s: invalid issue type: %s\n", is.ID, t)
				failed = true
				continue
			}
		}
		var parent *issue
		if fl.changed("parent") && fl.str("parent") != "" {
			p, err := inv.resolve(fl.str("parent"))
			if err != nil {
				fmt.Fprintf(inv.stderr, "Error updating %s: parent %s: %v\n", is.ID, fl.str("parent"), err)
				failed = true
				continue
			}
			if p.ID == is.ID || inv.db.descendants(is.ID)[p.ID] {
				fmt.Fprintf(inv.stderr, "Error updating %s: adding dependency would create a cycle\n", is.ID)
				failed = true
				continue
			}
			parent = p
		}
		oldStatus, oldPrio, oldAssignee := is.Status, is.Priority, is.Assignee
		changed := false
		if fl.boolean("claim") {
			switch {
			case is.Status == statusOpen && (is.Assignee == "" || is.Assignee == actor):
				is.Status, is.Assignee = statusInProgress, actor
				changed = true
				inv.claimed = append(inv.claimed, is.ID)
			case is.Status == statusInProgress && is.Assignee == actor:
				// A repeat claim by the same actor changes nothing.
			case is.Assignee != "" && is.Assignee != actor && inv.deviates(DeviateClaimStale):
				fmt.Fprintf(inv.stderr, "Error claiming %s: stale: the issue changed since it was read\n", is.ID)
				failed, stale = true, true
				continue
			case is.Assignee != "" && is.Assignee != actor:
				fmt.Fprintf(inv.stderr, "Error claiming %s: issue already claimed by %s\n", is.ID, is.Assignee)
				failed = true
				continue
			default:
				fmt.Fprintf(inv.stderr, "Error claiming %s: issue not claimable: status %s\n", is.ID, is.Status)
				failed = true
				continue
			}
		}
		if msg := inv.notesRefused(is); msg != "" {
			fmt.Fprintln(inv.stderr, msg)
			failed = true
			continue
		}
		onlyClaim := true
		for _, f := range updateFlags {
			if f != "claim" && fl.changed(f) {
				onlyClaim = false
			}
		}
		if onlyClaim && !changed {
			updated = append(updated, is)
			continue
		}
		if fl.changed("status") {
			is.Status = status
		}
		if fl.changed("priority") {
			is.Priority = prio
		}
		if fl.changed("type") {
			is.IssueType, _ = normalizeType(fl.str("type"))
		}
		if fl.changed("title") {
			is.Title = strings.TrimSpace(fl.str("title"))
		}
		if descSet {
			is.Description = desc
		}
		if designSet {
			is.Design = design
		}
		if fl.changed("acceptance") {
			is.AcceptanceCriteria = fl.str("acceptance")
		}
		if fl.changed("notes") {
			is.Notes = fl.str("notes")
		}
		if fl.changed("clear-notes") && fl.boolean("clear-notes") { // DeviateNotes
			is.Notes = ""
		}
		if a := fl.str("append-notes"); fl.changed("append-notes") {
			if is.Notes != "" {
				is.Notes += "\n"
			}
			is.Notes += a
		}
		if fl.changed("assignee") {
			is.Assignee = fl.str("assignee")
		}
		if fl.changed("spec-id") {
			is.SpecID = fl.str("spec-id")
		}
		if fl.changed("external-ref") {
			is.ExternalRef = fl.str("external-ref")
		}
		if fl.changed("estimate") {
			n := fl.integer("estimate")
			is.EstimatedMinutes = &n
		}
		if fl.changed("defer") {
			is.DeferUntil = deferAt
		}
		if fl.changed("due") {
			is.DueAt = dueAt
		}
		if fl.changed("metadata") {
			is.Metadata = meta
		}
		if err := applyMetadataEdits(is, fl.list("set-metadata"), fl.list("unset-metadata")); err != nil {
			fmt.Fprintf(inv.stderr, "Error updating %s: %v\n", is.ID, err)
			failed = true
			continue
		}
		labels := is.Labels
		if fl.changed("set-labels") {
			labels = fl.list("set-labels")
		}
		labels = append(labels, fl.list("add-label")...)
		var kept []string
		for _, l := range labels {
			if !containsStr(fl.list("remove-label"), l) {
				kept = append(kept, l)
			}
		}
		is.Labels = uniqueSorted(kept)
		if fl.changed("parent") {
			var deps []*dep
			for _, d := range inv.db.Deps {
				if !(d.IssueID == is.ID && d.Type == depParentChild) {
					deps = append(deps, d)
				}
			}
			inv.db.Deps = deps
			if parent != nil {
				inv.db.Deps = append(inv.db.Deps, &dep{IssueID: is.ID, DependsOnID: parent.ID, Type: depParentChild, CreatedAt: now, CreatedBy: actor})
			}
		}
		started := is.StartedAt
		inv.applyStatusChange(is, oldStatus, now)
		if changed && started != nil {
			is.StartedAt = started // a re-claim keeps the first start
		}
		if is.Status == statusClosed && fl.changed("session") {
			is.ClosedBySession = fl.str("session")
		}
		is.UpdatedAt = now
		// --claim writes no interaction line; explicit changes do.
		if oldStatus != is.Status && fl.changed("status") {
			inv.logInteraction(is.ID, "status", oldStatus, is.Status, "")
		}
		if fl.changed("assignee") && oldAssignee != is.Assignee {
			inv.logInteraction(is.ID, "assignee", oldAssignee, is.Assignee, "")
		}
		if oldPrio != is.Priority {
			inv.logInteraction(is.ID, "priority", strconv.Itoa(oldPrio), strconv.Itoa(is.Priority), "")
		}
		inv.markDirty("update " + is.ID)
		updated = append(updated, is)
	}
	if len(updated) > 0 {
		inv.touched = updated[len(updated)-1].ID
		if inv.jsonOut {
			arr := make([]obj, len(updated))
			for i, is := range updated {
				arr[i] = baseObj(is)
			}
			inv.printJSON(arr)
		} else if !inv.quiet {
			for _, is := range updated {
				fmt.Fprintf(inv.stdout, "✓ Updated issue: %s — %s\n", is.ID, is.Title)
			}
		}
	}
	if stale {
		return 13 // DeviateClaimStale
	}
	if failed {
		return 1
	}
	return 0
}

// applyStatusChange maintains started_at and closed_at around a status
// change.
func (inv *invocation) applyStatusChange(is *issue, oldStatus string, now time.Time) {
	if is.Status == oldStatus {
		return
	}
	if is.Status == statusInProgress {
		t := now
		is.StartedAt = &t
	}
	if is.Status == statusClosed {
		t := now
		is.ClosedAt = &t
	} else {
		is.ClosedAt, is.CloseReason, is.ClosedBySession = nil, "", ""
	}
}

// applyMetadataEdits applies --set-metadata key=value and --unset-metadata.
func applyMetadataEdits(is *issue, sets, unsets []string) error {
	if len(sets) == 0 && len(unsets) == 0 {
		return nil
	}
	m := map[string]any{}
	if len(is.Metadata) > 0 {
		if err := json.Unmarshal(is.Metadata, &m); err != nil {
			return fmt.Errorf("existing metadata is not a JSON object: %w", err)
		}
	}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("invalid --set-metadata %q (want key=value)", s)
		}
		var parsed any
		if err := json.Unmarshal([]byte(v), &parsed); err == nil {
			m[k] = parsed
		} else {
			m[k] = v
		}
	}
	for _, k := range unsets {
		delete(m, k)
	}
	if len(m) == 0 {
		is.Metadata = nil
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	is.Metadata = b
	return nil
}

func runClose(inv *invocation) int {
	fl := inv.fl
	ids := inv.idsOrLastTouched()
	if len(ids) == 0 {
		return inv.failJSON(true, "no issue ID given and no last touched issue")
	}
	var issues []*issue
	for _, ref := range ids {
		is, err := inv.resolve(ref)
		if err != nil {
			return inv.failJSON(true, fmt.Sprintf("resolving ID %s: %v", ref, err))
		}
		issues = append(issues, is)
	}
	reasons := fl.strAll("reason")
	if fl.changed("reason-file") {
		r, err := inv.readText(fl.str("reason-file"))
		if err != nil {
			return inv.failJSON(true, err.Error())
		}
		reasons = []string{strings.TrimSpace(r)}
	}
	now := roundTime(inv.now)
	force := fl.boolean("force")
	failed := false
	var closed []*issue
	candidates := map[string]bool{}
	for i, is := range issues {
		reason := "Closed"
		switch {
		case len(reasons) == len(issues):
			reason = reasons[i]
		case len(reasons) > 0:
			reason = reasons[len(reasons)-1]
		}
		if blockers := inv.db.openBlockers(is.ID); len(blockers) > 0 && !force {
			fmt.Fprintf(inv.stderr, "cannot close %s: blocked by open issues %v (use --force to override)\n", is.ID, blockers)
			failed = true
			continue
		}
		if open := inv.db.openChildren(is); open > 0 && !force {
			// bd 1.0.5, by hand: exit 1, this line on stderr, with or without --json.
			fmt.Fprintf(inv.stderr, "cannot close epic %s: %d open child issue(s); close children first or use --force to override\n", is.ID, open)
			failed = true
			continue
		}
		if is.Status == statusPinned && !force {
			fmt.Fprintf(inv.stderr, "cannot close pinned issue %s (use --force to override)\n", is.ID)
			failed = true
			continue
		}
		for _, d := range inv.db.dependentsOf(is.ID) {
			if d.Type == depBlocks {
				if t := inv.db.get(d.IssueID); t != nil && t.Status != statusClosed {
					if len(inv.db.openBlockers(t.ID)) > 0 {
						candidates[t.ID] = true
					}
					t.UpdatedAt = now
				}
			}
		}
		old := is.Status
		is.Status = statusClosed
		t := now
		is.ClosedAt, is.CloseReason, is.UpdatedAt = &t, reason, now
		if s := fl.str("session"); s != "" {
			is.ClosedBySession = s
		} else if s := inv.env["CLAUDE_SESSION_ID"]; s != "" {
			is.ClosedBySession = s
		}
		inv.logInteraction(is.ID, "status", old, statusClosed, reason)
		inv.markDirty("close " + is.ID)
		closed = append(closed, is)
	}
	if len(closed) > 0 {
		inv.touched = closed[len(closed)-1].ID
	}
	var unblocked []*issue
	for id := range candidates {
		if t := inv.db.get(id); t != nil && t.Status == statusOpen && len(inv.db.openBlockers(id)) == 0 {
			unblocked = append(unblocked, t)
		}
	}
	sort.Slice(unblocked, func(i, j int) bool {
		a, b := unblocked[i], unblocked[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
	switch {
	case inv.jsonOut && fl.boolean("suggest-next"):
		c, u := []obj{}, []obj{}
		for _, is := range closed {
			c = append(c, baseObj(is).sorted())
		}
		for _, is := range unblocked {
			u = append(u, baseObj(is).sorted())
		}
		inv.printJSON(obj{{"closed", c}, {"schema_version", 1}, {"unblocked", u}})
	case inv.jsonOut:
		if len(closed) > 0 {
			arr := make([]obj, len(closed))
			for i, is := range closed {
				arr[i] = baseObj(is)
			}
			inv.printJSON(arr)
		}
	case !inv.quiet:
		for _, is := range closed {
			fmt.Fprintf(inv.stdout, "✓ Closed %s — %s: %s\n", is.ID, is.Title, is.CloseReason)
		}
		if fl.boolean("suggest-next") && len(unblocked) > 0 {
			fmt.Fprintf(inv.stdout, "\nNewly unblocked:\n")
			for _, is := range unblocked {
				fmt.Fprintf(inv.stdout, "  %s %s ● P%d %s\n", statusIcon(is.Status), is.ID, is.Priority, is.Title)
			}
		}
	}
	if failed {
		return 1
	}
	return 0
}

func runReopen(inv *invocation) int {
	if len(inv.args) == 0 {
		return inv.argsError("requires at least 1 arg(s), only received 0")
	}
	now := roundTime(inv.now)
	failed := false
	var reopened []*issue
	for _, ref := range inv.args {
		is, err := inv.resolve(ref)
		if err != nil {
			fmt.Fprintf(inv.stderr, "Error resolving %s: %v\n", ref, err)
			failed = true
			continue
		}
		if is.Status != statusClosed {
			fmt.Fprintf(inv.stderr, "%s is already %s\n", is.ID, is.Status)
			continue
		}
		is.Status = statusOpen
		is.ClosedAt, is.CloseReason, is.ClosedBySession = nil, "", ""
		is.UpdatedAt = now
		inv.logInteraction(is.ID, "status", statusClosed, statusOpen, inv.fl.str("reason"))
		inv.markDirty("reopen " + is.ID)
		reopened = append(reopened, is)
	}
	if inv.jsonOut {
		arr := []obj{}
		for _, is := range reopened {
			arr = append(arr, baseObj(is))
		}
		if len(arr) > 0 || !failed {
			inv.printJSON(arr)
		}
	} else if !inv.quiet {
		for _, is := range reopened {
			fmt.Fprintf(inv.stdout, "↻ Reopened %s\n", is.ID)
		}
	}
	if failed {
		return 1
	}
	return 0
}

// setDeferred implements `defer` (on=true) and `undefer`.
func setDeferred(inv *invocation, on bool) int {
	if len(inv.args) == 0 {
		return inv.argsError("requires at least 1 arg(s), only received 0")
	}
	var until *time.Time
	if on && inv.fl.str("until") != "" {
		t, err := parseWhen(inv.fl.str("until"), inv.now)
		if err != nil {
			return inv.failJSON(true, fmt.Sprintf("invalid --until: %v", err))
		}
		t = roundTime(t)
		until = &t
	}
	now := roundTime(inv.now)
	failed := false
	var changed []*issue
	for _, ref := range inv.args {
		is, err := inv.resolve(ref)
		if err != nil {
			fmt.Fprintf(inv.stderr, "Error resolving %s: %v\n", ref, err)
			failed = true
			continue
		}
		old := is.Status
		if on {
			is.Status = statusDeferred
			if until != nil {
				is.DeferUntil = until
			}
		} else {
			if is.Status == statusDeferred {
				is.Status = statusOpen
			}
			is.DeferUntil = nil
		}
		inv.applyStatusChange(is, old, now)
		is.UpdatedAt = now
		if old != is.Status {
			inv.logInteraction(is.ID, "status", old, is.Status, "")
		}
		inv.markDirty("defer " + is.ID)
		changed = append(changed, is)
	}
	if inv.jsonOut {
		if len(changed) > 0 {
			arr := make([]obj, len(changed))
			for i, is := range changed {
				arr[i] = baseObj(is)
			}
			inv.printJSON(arr)
		}
	} else if !inv.quiet {
		verb := "Deferred"
		if !on {
			verb = "Undeferred"
		}
		for _, is := range changed {
			fmt.Fprintf(inv.stdout, "* %s %s\n", verb, is.ID)
		}
	}
	if failed {
		return 1
	}
	return 0
}

func runDefer(inv *invocation) int   { return setDeferred(inv, true) }
func runUndefer(inv *invocation) int { return setDeferred(inv, false) }

func runNote(inv *invocation) int {
	if len(inv.args) == 0 {
		return inv.argsError("requires at least 1 arg(s), only received 0")
	}
	text := strings.Join(inv.args[1:], " ")
	switch {
	case inv.fl.changed("file"):
		t, err := inv.readText(inv.fl.str("file"))
		if err != nil {
			return inv.fail(err.Error())
		}
		text = strings.TrimRight(t, "\n")
	case inv.fl.boolean("stdin"):
		t, err := inv.readText("-")
		if err != nil {
			return inv.fail(err.Error())
		}
		text = strings.TrimRight(t, "\n")
	}
	if strings.TrimSpace(text) == "" {
		return inv.fail("note text required (as arguments, --stdin or --file)")
	}
	is, err := inv.resolve(inv.args[0])
	if err != nil {
		fmt.Fprintf(inv.stderr, "Error resolving %s: %v\n", inv.args[0], err)
		return 1
	}
	if is.Notes != "" {
		is.Notes += "\n"
	}
	is.Notes += text
	is.UpdatedAt = roundTime(inv.now)
	inv.markDirty("note " + is.ID)
	if inv.jsonOut {
		inv.printJSON([]obj{baseObj(is)})
	} else if !inv.quiet {
		fmt.Fprintf(inv.stdout, "✓ Note added to %s — %s\n", is.ID, is.Title)
	}
	return 0
}

// replaceIDRefs replaces whole-id mentions of id in s with "[deleted:id]".
func replaceIDRefs(s, id string) (string, bool) {
	var b strings.Builder
	found := false
	isIDChar := func(c byte) bool {
		return c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for {
		i := strings.Index(s, id)
		if i < 0 {
			b.WriteString(s)
			break
		}
		end := i + len(id)
		before := i == 0 || !(isIDChar(s[i-1]) || s[i-1] == '.' || s[i-1] == '[' && strings.HasSuffix(s[:i], "[deleted:"))
		after := end == len(s) || !(isIDChar(s[end]) || s[end] == '.' && end+1 < len(s) && s[end+1] >= '0' && s[end+1] <= '9')
		if before && after {
			b.WriteString(s[:i] + "[deleted:" + id + "]")
			found = true
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
	return b.String(), found
}

func runDelete(inv *invocation) int {
	fl := inv.fl
	refs := append([]string{}, inv.args...)
	if fl.changed("from-file") {
		t, err := inv.readText(fl.str("from-file"))
		if err != nil {
			return inv.fail(err.Error())
		}
		for _, line := range strings.Split(t, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				refs = append(refs, line)
			}
		}
	}
	if len(refs) == 0 {
		return inv.argsError("requires at least 1 arg(s), only received 0")
	}
	var targets []*issue
	del := map[string]bool{}
	for _, ref := range refs {
		is, err := inv.resolve(ref)
		if err != nil {
			return inv.fail(err.Error())
		}
		if !del[is.ID] {
			del[is.ID] = true
			targets = append(targets, is)
		}
	}
	var links []*dep
	connected := map[string]bool{}
	for _, d := range inv.db.Deps {
		if del[d.IssueID] || del[d.DependsOnID] {
			links = append(links, d)
			if !del[d.IssueID] {
				connected[d.IssueID] = true
			}
			if !del[d.DependsOnID] {
				connected[d.DependsOnID] = true
			}
		}
	}
	var connIDs []string
	for id := range connected {
		connIDs = append(connIDs, id)
	}
	sort.Strings(connIDs)
	refIssues := func() []*issue {
		var out []*issue
		for _, id := range connIDs {
			c := inv.db.get(id)
			if c == nil {
				continue
			}
			for _, t := range targets {
				hit := false
				for _, f := range []string{c.Description, c.Design, c.AcceptanceCriteria, c.Notes} {
					if _, ok := replaceIDRefs(f, t.ID); ok {
						hit = true
					}
				}
				if hit {
					out = append(out, c)
					break
				}
			}
		}
		return out
	}()
	if !fl.boolean("force") || fl.boolean("dry-run") {
		var b strings.Builder
		b.WriteString("\n⚠️  DELETE PREVIEW\n\n")
		if len(targets) == 1 {
			fmt.Fprintf(&b, "Issue to delete:\n  %s: %s\n\n", targets[0].ID, targets[0].Title)
		} else {
			fmt.Fprintf(&b, "Issues to delete (%d):\n", len(targets))
			for _, t := range targets {
				fmt.Fprintf(&b, "  %s: %s\n", t.ID, t.Title)
			}
			b.WriteString("\n")
		}
		if len(links) > 0 {
			fmt.Fprintf(&b, "Dependency links to remove: %d\n", len(links))
			for _, d := range links {
				dir := "outbound"
				if del[d.DependsOnID] && !del[d.IssueID] {
					dir = "inbound"
				}
				fmt.Fprintf(&b, "  %s → %s (%s)\n", d.IssueID, d.DependsOnID, dir)
			}
			b.WriteString("\n")
		}
		if len(connIDs) > 0 {
			b.WriteString("Connected issues where text references will be updated:\n")
			if len(refIssues) == 0 {
				b.WriteString("  (none have text references)\n")
			}
			for _, c := range refIssues {
				fmt.Fprintf(&b, "  %s: %s\n", c.ID, c.Title)
			}
			b.WriteString("\n")
		}
		ids := make([]string, len(targets))
		for i, t := range targets {
			ids[i] = t.ID
		}
		fmt.Fprintf(&b, "This operation cannot be undone!\nTo proceed, run: bd delete %s --force\n\n", strings.Join(ids, " "))
		fmt.Fprint(inv.stdout, b.String())
		return 0
	}
	now := roundTime(inv.now)
	for _, c := range refIssues {
		for _, t := range targets {
			c.Description, _ = replaceIDRefs(c.Description, t.ID)
			c.Design, _ = replaceIDRefs(c.Design, t.ID)
			c.AcceptanceCriteria, _ = replaceIDRefs(c.AcceptanceCriteria, t.ID)
			c.Notes, _ = replaceIDRefs(c.Notes, t.ID)
		}
		c.UpdatedAt = now
	}
	var deps []*dep
	for _, d := range inv.db.Deps {
		if !del[d.IssueID] && !del[d.DependsOnID] {
			deps = append(deps, d)
		}
	}
	inv.db.Deps = deps
	var comments []*comment
	for _, c := range inv.db.Comments {
		if !del[c.IssueID] {
			comments = append(comments, c)
		}
	}
	inv.db.Comments = comments
	var issues []*issue
	for _, is := range inv.db.Issues {
		if !del[is.ID] {
			issues = append(issues, is)
		}
	}
	inv.db.Issues = issues
	inv.db.index()
	ids := make([]string, len(targets))
	for i, t := range targets {
		ids[i] = t.ID
	}
	inv.markDirty("delete " + strings.Join(ids, " "))
	if inv.jsonOut {
		var deleted any = ids[0]
		if len(ids) > 1 {
			deleted = ids
		}
		inv.printJSON(obj{{"deleted", deleted}, {"dependencies_removed", len(links)}, {"references_updated", len(refIssues)}, {"schema_version", 1}})
		return 0
	}
	if inv.quiet {
		return 0
	}
	if len(ids) == 1 {
		fmt.Fprintf(inv.stdout, "✓ Deleted %s\n", ids[0])
	} else {
		fmt.Fprintf(inv.stdout, "✓ Deleted %d issues: %s\n", len(ids), strings.Join(ids, ", "))
	}
	fmt.Fprintf(inv.stdout, "  Removed %d dependency link(s)\n  Updated text references in %d issue(s)\n", len(links), len(refIssues))
	return 0
}
