package standin

import (
	"fmt"
	"sort"
	"strings"
)

// addDep adds from→to (from depends on to) after bd's checks. It returns
// the edge type used, or an exit code and false on failure.
func (inv *invocation) addDep(fromRef, toRef, typ string) (from, to *issue, code int, ok bool) {
	if !containsStr(depTypes, typ) {
		return nil, nil, inv.fail(fmt.Sprintf("invalid dependency type %q (valid: %s)", typ, strings.Join(depTypes, ", "))), false
	}
	if strings.HasPrefix(toRef, "external:") {
		return nil, nil, inv.fail("external dependencies (external:<project>:<capability>) are not implemented by the bd stand-in"), false
	}
	from, err := inv.resolve(fromRef)
	if err != nil {
		return nil, nil, inv.fail(fmt.Sprintf("resolving issue ID %s: %v", fromRef, err)), false
	}
	to, err = inv.resolve(toRef)
	if err != nil {
		return nil, nil, inv.fail(fmt.Sprintf("resolving dependency ID %s: resolving issue ID %s: %v", toRef, toRef, err)), false
	}
	if from.ID == to.ID {
		return nil, nil, inv.fail("cannot add self-dependency"), false
	}
	if cycleTypes[typ] && !inv.fl.boolean("no-cycle-check") && inv.db.wouldCycle(from.ID, to.ID) {
		return nil, nil, inv.fail("adding dependency would create a cycle"), false
	}
	now := roundTime(inv.now)
	if d := inv.db.findDep(from.ID, to.ID); d != nil {
		d.Type = typ
	} else {
		inv.db.Deps = append(inv.db.Deps, &dep{IssueID: from.ID, DependsOnID: to.ID, Type: typ, CreatedAt: now, CreatedBy: inv.actor()})
	}
	from.UpdatedAt = now
	inv.markDirty(fmt.Sprintf("dep add %s %s %s", from.ID, to.ID, typ))
	return from, to, 0, true
}

func depAddedJSON(from, to *issue, typ string) obj {
	return obj{{"depends_on_id", to.ID}, {"issue_id", from.ID}, {"schema_version", 1}, {"status", "added"}, {"type", typ}}
}

func runDepAdd(inv *invocation) int {
	fl := inv.fl
	if len(inv.args) == 0 {
		return inv.argsError("requires at least 1 arg(s), only received 0")
	}
	target := ""
	switch {
	case len(inv.args) >= 2:
		target = inv.args[1]
	case fl.str("blocked-by") != "":
		target = fl.str("blocked-by")
	case fl.str("depends-on") != "":
		target = fl.str("depends-on")
	default:
		return inv.fail("missing depends-on ID (give it as the second argument or with --blocked-by/--depends-on)")
	}
	if len(inv.args) > 2 {
		return inv.argsError(fmt.Sprintf("accepts at most 2 arg(s), received %d", len(inv.args)))
	}
	typ := fl.str("type")
	from, to, code, ok := inv.addDep(inv.args[0], target, typ)
	if !ok {
		return code
	}
	if inv.jsonOut {
		inv.printJSON(depAddedJSON(from, to, typ))
	} else if !inv.quiet {
		fmt.Fprintf(inv.stdout, "✓ Added dependency: %s (%s) depends on %s (%s) (%s)\n", from.ID, from.Title, to.ID, to.Title, typ)
	}
	return 0
}

// runDepBlocks is `bd dep <blocker> --blocks <blocked>`.
func runDepBlocks(inv *invocation) int {
	blocked := inv.fl.str("blocks")
	if len(inv.args) == 0 && blocked == "" {
		fmt.Fprint(inv.stdout, inv.cmd.help)
		return 0
	}
	if len(inv.args) != 1 || blocked == "" {
		return inv.fail("use 'bd dep <blocker-id> --blocks <blocked-id>' or a subcommand (see 'bd dep --help')")
	}
	from, to, code, ok := inv.addDep(blocked, inv.args[0], depBlocks)
	if !ok {
		return code
	}
	if inv.jsonOut {
		inv.printJSON(depAddedJSON(from, to, depBlocks))
	} else if !inv.quiet {
		fmt.Fprintf(inv.stdout, "✓ Added dependency: %s (%s) blocks %s (%s)\n", to.ID, to.Title, from.ID, from.Title)
	}
	return 0
}

func runDepRemove(inv *invocation) int {
	if len(inv.args) != 2 {
		return inv.argsError(fmt.Sprintf("accepts 2 arg(s), received %d", len(inv.args)))
	}
	from, err := inv.resolve(inv.args[0])
	if err != nil {
		return inv.fail(fmt.Sprintf("resolving issue ID %s: %v", inv.args[0], err))
	}
	to, err := inv.resolve(inv.args[1])
	if err != nil {
		return inv.fail(fmt.Sprintf("resolving dependency ID %s: resolving issue ID %s: %v", inv.args[1], inv.args[1], err))
	}
	var kept []*dep
	found := false
	for _, d := range inv.db.Deps {
		if d.IssueID == from.ID && d.DependsOnID == to.ID {
			found = true
			continue
		}
		kept = append(kept, d)
	}
	if !found {
		return inv.fail(fmt.Sprintf("dependency %s → %s does not exist", from.ID, to.ID))
	}
	inv.db.Deps = kept
	from.UpdatedAt = roundTime(inv.now)
	inv.markDirty(fmt.Sprintf("dep remove %s %s", from.ID, to.ID))
	if inv.jsonOut {
		inv.printJSON(obj{{"depends_on_id", to.ID}, {"issue_id", from.ID}, {"schema_version", 1}, {"status", "removed"}})
	} else if !inv.quiet {
		fmt.Fprintf(inv.stdout, "✓ Removed dependency: %s (%s) no longer depends on %s (%s)\n", from.ID, from.Title, to.ID, to.Title)
	}
	return 0
}

func runDepList(inv *invocation) int {
	if len(inv.args) == 0 {
		return inv.argsError("requires at least 1 arg(s), only received 0")
	}
	dir := inv.fl.str("direction")
	if dir != "down" && dir != "up" {
		return inv.fail(fmt.Sprintf("invalid --direction %q (use 'down' or 'up')", dir))
	}
	typ := inv.fl.str("type")
	arr := []obj{}
	var text strings.Builder
	for _, ref := range inv.args {
		is, err := inv.resolve(ref)
		if err != nil {
			return inv.fail(fmt.Sprintf("resolving %s: %v", ref, err))
		}
		edges := inv.db.depsOf(is.ID)
		if dir == "up" {
			edges = inv.db.dependentsOf(is.ID)
		}
		var lines []string
		for _, d := range edges {
			if typ != "" && d.Type != typ {
				continue
			}
			otherID := d.DependsOnID
			if dir == "up" {
				otherID = d.IssueID
			}
			t := inv.db.get(otherID)
			if t == nil {
				continue
			}
			arr = append(arr, baseObj(t).add("dependency_type", d.Type))
			lines = append(lines, fmt.Sprintf("  %s %s: %s [P%d] (%s) via %s\n", statusIcon(t.Status), t.ID, t.Title, t.Priority, t.Status, d.Type))
		}
		switch {
		case len(lines) == 0 && dir == "up":
			fmt.Fprintf(&text, "\nNo issues depend on %s\n", is.ID)
		case len(lines) == 0:
			fmt.Fprintf(&text, "\n%s has no dependencies\n", is.ID)
		case dir == "up":
			fmt.Fprintf(&text, "\n📋 Issues that depend on %s:\n\n%s", is.ID, strings.Join(lines, ""))
		default:
			fmt.Fprintf(&text, "\n📋 %s depends on:\n\n%s", is.ID, strings.Join(lines, ""))
		}
	}
	if inv.jsonOut {
		inv.printJSON(arr)
		return 0
	}
	fmt.Fprint(inv.stdout, text.String()+"\n")
	return 0
}

// treeNode is one node of `dep tree`.
type treeNode struct {
	is        *issue
	depth     int
	parentID  string
	edge      string
	truncated bool
	last      []bool // for drawing: whether each ancestor level was the last child
}

func runDepTree(inv *invocation) int {
	fl := inv.fl
	if len(inv.args) != 1 {
		return inv.argsError(fmt.Sprintf("accepts 1 arg(s), received %d", len(inv.args)))
	}
	root, err := inv.resolve(inv.args[0])
	if err != nil {
		return inv.fail(fmt.Sprintf("resolving %s: %v", inv.args[0], err))
	}
	dir := fl.str("direction")
	if fl.boolean("reverse") {
		dir = "up"
	}
	if dir == "" {
		dir = "down"
	}
	if dir != "down" && dir != "up" && dir != "both" {
		return inv.fail(fmt.Sprintf("invalid --direction %q (use 'down', 'up' or 'both')", dir))
	}
	maxDepth := fl.integer("max-depth")
	if maxDepth <= 0 {
		maxDepth = 50
	}
	status := fl.str("status")
	var nodes []treeNode
	collect := func(up bool) {
		seen := map[string]bool{root.ID: true}
		var walk func(id string, depth int, last []bool)
		walk = func(id string, depth int, last []bool) {
			var edges []*dep
			if up {
				edges = inv.db.dependentsOf(id)
			} else {
				edges = inv.db.depsOf(id)
			}
			var kids []*dep
			for _, d := range edges {
				other := d.DependsOnID
				if up {
					other = d.IssueID
				}
				t := inv.db.get(other)
				if t == nil || (status != "" && t.Status != status) {
					continue
				}
				if seen[other] && !fl.boolean("show-all-paths") {
					continue
				}
				kids = append(kids, d)
			}
			for i, d := range kids {
				other := d.DependsOnID
				if up {
					other = d.IssueID
				}
				seen[other] = true
				l := append(append([]bool{}, last...), i == len(kids)-1)
				n := treeNode{is: inv.db.get(other), depth: depth + 1, parentID: id, edge: d.Type, last: l}
				if depth+1 >= maxDepth {
					n.truncated = len(inv.db.depsOf(other)) > 0
					nodes = append(nodes, n)
					continue
				}
				nodes = append(nodes, n)
				walk(other, depth+1, l)
			}
		}
		walk(root.ID, 0, nil)
	}
	nodes = append(nodes, treeNode{is: root})
	if dir == "down" || dir == "both" {
		collect(false)
	}
	if dir == "up" || dir == "both" {
		collect(true)
	}
	if inv.jsonOut {
		arr := make([]obj, len(nodes))
		for i, n := range nodes {
			o := baseObj(n.is).add("depth", n.depth).add("parent_id", n.parentID)
			if n.edge != "" {
				o = o.add("edge_from_parent", n.edge)
			}
			arr[i] = o.add("truncated", n.truncated)
		}
		inv.printJSON(arr)
		return 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n🌲 Dependency tree for %s:\n\n", root.ID)
	for _, n := range nodes {
		if n.depth == 0 {
			tag := ""
			switch {
			case inv.db.isReady(n.is, inv.now, false):
				tag = " \x1b[1m[READY]\x1b[m"
			case len(inv.db.openBlockers(n.is.ID)) > 0:
				tag = " \x1b[1m[BLOCKED]\x1b[m"
			}
			fmt.Fprintf(&b, "%s: %s [P%d] (%s)%s\n", n.is.ID, n.is.Title, n.is.Priority, n.is.Status, tag)
			continue
		}
		prefix := "    "
		for _, l := range n.last[:len(n.last)-1] {
			if l {
				prefix += "    "
			} else {
				prefix += "│   "
			}
		}
		branch := "├── "
		if n.last[len(n.last)-1] {
			branch = "└── "
		}
		fmt.Fprintf(&b, "%s%s%s: %s [P%d] (%s) [%s]\n", prefix, branch, n.is.ID, n.is.Title, n.is.Priority, n.is.Status, n.edge)
	}
	b.WriteString("\n")
	fmt.Fprint(inv.stdout, b.String())
	return 0
}

// changeLabel implements `label add` and `label remove`.
func changeLabel(inv *invocation, add bool) int {
	if len(inv.args) < 2 {
		return inv.argsError(fmt.Sprintf("requires at least 2 arg(s), only received %d", len(inv.args)))
	}
	label := strings.TrimSpace(inv.args[len(inv.args)-1])
	if label == "" {
		return inv.fail("label cannot be empty")
	}
	failed := false
	arr := []obj{}
	for _, ref := range inv.args[:len(inv.args)-1] {
		is, err := inv.resolve(ref)
		if err != nil {
			fmt.Fprintf(inv.stderr, "Error resolving %s: %v\n", ref, err)
			failed = true
			continue
		}
		status := "added"
		if add {
			is.Labels = uniqueSorted(append(is.Labels, label))
		} else {
			status = "removed"
			var kept []string
			for _, l := range is.Labels {
				if l != label {
					kept = append(kept, l)
				}
			}
			is.Labels = kept
		}
		inv.markDirty(fmt.Sprintf("label %s %s %s", status, is.ID, label))
		arr = append(arr, obj{{"issue_id", is.ID}, {"label", label}, {"status", status}})
		if !inv.jsonOut && !inv.quiet {
			if add {
				fmt.Fprintf(inv.stdout, "✓ Added label '%s' to %s\n", label, is.ID)
			} else {
				fmt.Fprintf(inv.stdout, "✓ Removed label '%s' from %s\n", label, is.ID)
			}
		}
	}
	if inv.jsonOut && len(arr) > 0 {
		inv.printJSON(arr)
	}
	if failed {
		return 1
	}
	return 0
}

func runLabelAdd(inv *invocation) int    { return changeLabel(inv, true) }
func runLabelRemove(inv *invocation) int { return changeLabel(inv, false) }

func runLabelList(inv *invocation) int {
	if len(inv.args) != 1 {
		return inv.argsError(fmt.Sprintf("accepts 1 arg(s), received %d", len(inv.args)))
	}
	is, err := inv.resolve(inv.args[0])
	if err != nil {
		return inv.fail(fmt.Sprintf("resolving %s: %v", inv.args[0], err))
	}
	labels := append([]string{}, is.Labels...)
	if inv.jsonOut {
		inv.printJSON(labels)
		return 0
	}
	if len(labels) == 0 {
		fmt.Fprintf(inv.stdout, "\n%s has no labels\n", is.ID)
		return 0
	}
	fmt.Fprintf(inv.stdout, "\n🏷 Labels for %s:\n", is.ID)
	for _, l := range labels {
		fmt.Fprintf(inv.stdout, "  - %s\n", l)
	}
	fmt.Fprintln(inv.stdout)
	return 0
}

func runLabelListAll(inv *invocation) int {
	counts := map[string]int{}
	for _, is := range inv.db.Issues {
		for _, l := range is.Labels {
			counts[l]++
		}
	}
	names := make([]string, 0, len(counts))
	for l := range counts {
		names = append(names, l)
	}
	sort.Strings(names)
	if inv.jsonOut {
		arr := []obj{}
		for _, l := range names {
			arr = append(arr, obj{{"label", l}, {"count", counts[l]}})
		}
		inv.printJSON(arr)
		return 0
	}
	if len(names) == 0 {
		fmt.Fprintln(inv.stdout, "\nNo labels found")
		return 0
	}
	fmt.Fprintf(inv.stdout, "\n🏷 All labels (%d unique):\n", len(names))
	for _, l := range names {
		fmt.Fprintf(inv.stdout, "  %s (%d)\n", l, counts[l])
	}
	fmt.Fprintln(inv.stdout)
	return 0
}

func runComments(inv *invocation) int {
	if len(inv.args) != 1 {
		return inv.argsError(fmt.Sprintf("accepts 1 arg(s), received %d", len(inv.args)))
	}
	is, err := inv.resolve(inv.args[0])
	if err != nil {
		return inv.fail(fmt.Sprintf("resolving %s: %v", inv.args[0], err))
	}
	cs := inv.db.commentsOf(is.ID)
	if inv.jsonOut {
		arr := make([]obj, len(cs))
		for i, c := range cs {
			arr[i] = commentObj(c)
		}
		inv.printJSON(arr)
		return 0
	}
	if len(cs) == 0 {
		fmt.Fprintf(inv.stdout, "No comments on %s\n", is.ID)
		return 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nComments on %s:\n\n", is.ID)
	for _, c := range cs {
		t := c.CreatedAt.UTC()
		if inv.fl.boolean("local-time") {
			t = t.Local()
		}
		fmt.Fprintf(&b, "[%s] at %s\n", c.Author, t.Format("2006-01-02 15:04"))
		for _, line := range strings.Split(c.Text, "\n") {
			fmt.Fprintf(&b, "  %s\n", line)
		}
		b.WriteString("\n")
	}
	fmt.Fprint(inv.stdout, b.String())
	return 0
}

func runCommentAdd(inv *invocation) int {
	if len(inv.args) == 0 {
		return inv.argsError("requires at least 1 arg(s), only received 0")
	}
	text := strings.Join(inv.args[1:], " ")
	if inv.fl.changed("file") {
		t, err := inv.readText(inv.fl.str("file"))
		if err != nil {
			return inv.fail(err.Error())
		}
		text = strings.TrimRight(t, "\n")
	}
	if strings.TrimSpace(text) == "" {
		return inv.fail("comment text required (as an argument or with --file)")
	}
	is, err := inv.resolve(inv.args[0])
	if err != nil {
		return inv.fail(fmt.Sprintf("resolving %s: %v", inv.args[0], err))
	}
	author := inv.fl.str("author")
	if author == "" {
		author = inv.actor()
	}
	id, err := newUUIDv7(inv.now, inv.rand())
	if err != nil {
		return inv.fail(err.Error())
	}
	c := &comment{ID: id, IssueID: is.ID, Author: author, Text: text, CreatedAt: inv.now.UTC()}
	inv.db.Comments = append(inv.db.Comments, &comment{ID: id, IssueID: is.ID, Author: author, Text: text, CreatedAt: roundTime(inv.now)})
	inv.markDirty("comment " + is.ID)
	if inv.jsonOut {
		inv.printJSON(commentObj(c).add("schema_version", 1).sorted())
	} else if !inv.quiet {
		fmt.Fprintf(inv.stdout, "Comment added to %s\n", is.ID)
	}
	return 0
}

func runCommentsListInvalid(inv *invocation) int {
	return inv.fail("'bd comments list' is not a command; use 'bd comments <issue-id>' to list comments")
}
