package dashboard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/proc"
)

// Node states, as shown in the graph and its legend.
const (
	StateClosed     = "closed"
	StateInProgress = "in_progress"
	StateReady      = "ready"
	StateBlocked    = "blocked"
	StateStuck      = "stuck"
	StateDeferred   = "deferred"
)

// palette colours each state: the Okabe-Ito colours, which stay apart for
// the common colour-vision deficiencies, with black text on all of them.
var palette = map[string]string{
	StateClosed:     "#009E73", // bluish green
	StateInProgress: "#56B4E9", // sky blue
	StateReady:      "#F0E442", // yellow
	StateBlocked:    "#E69F00", // orange
	StateStuck:      "#CC79A7", // reddish purple
	StateDeferred:   "#BBBBBB", // grey
}

// States lists the states in legend order.
var States = []string{StateClosed, StateInProgress, StateReady, StateBlocked, StateStuck, StateDeferred}

// Node is one issue in the graph.
type Node struct {
	ID, Title, State string
	Deps             []string // the issues this one depends on (blocks edges)
}

// Colour is the node's fill colour.
func (n Node) Colour() string { return palette[n.State] }

// stateOf classifies an issue. Stuck wins over every open state, so a
// stuck issue stands out however bd files it.
func stateOf(is beads.Issue, status map[string]string, stuckLabel string) string {
	switch is.Status {
	case beads.StatusClosed:
		return StateClosed
	case beads.StatusDeferred:
		return StateDeferred
	}
	if is.HasLabel(stuckLabel) {
		return StateStuck
	}
	if is.Status == beads.StatusInProgress {
		return StateInProgress
	}
	if is.Status == beads.StatusBlocked {
		return StateBlocked
	}
	for _, d := range is.Dependencies {
		if d.Type == beads.DepBlocks && status[d.DependsOnID] != beads.StatusClosed {
			return StateBlocked
		}
	}
	return StateReady
}

// Nodes turns the tracker's issues into graph nodes, sorted by ID.
func Nodes(issues []beads.Issue, stuckLabel string) []Node {
	status := map[string]string{}
	for _, is := range issues {
		status[is.ID] = is.Status
	}
	nodes := make([]Node, 0, len(issues))
	for _, is := range issues {
		n := Node{ID: is.ID, Title: is.Title, State: stateOf(is, status, stuckLabel)}
		for _, d := range is.Dependencies {
			if d.Type == beads.DepBlocks {
				if _, ok := status[d.DependsOnID]; ok {
					n.Deps = append(n.Deps, d.DependsOnID)
				}
			}
		}
		sort.Strings(n.Deps)
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	return nodes
}

// dotSafe keeps the characters that cannot break out of a DOT string or an
// SVG attribute, whatever Graphviz does with them: issue IDs and titles
// come from the tracker, which agents write to.
func dotSafe(s string, limit int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case strings.ContainsRune(" -_.,:;()/#+=?!", r):
			b.WriteRune(r)
		case r > 127 && r != '\u2028' && r != '\u2029':
			b.WriteRune(r)
		default:
			b.WriteRune(' ')
		}
		if b.Len() >= limit {
			b.WriteString("…")
			break
		}
	}
	return b.String()
}

// DOT writes the graph in Graphviz's language. Each node links to its issue
// page and carries its state as an SVG class.
func DOT(nodes []Node) []byte {
	var b bytes.Buffer
	b.WriteString("digraph issues {\n  rankdir=LR;\n  bgcolor=\"transparent\";\n")
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fontname=\"sans-serif\", fontsize=11, fontcolor=\"#000000\", penwidth=1.2];\n")
	b.WriteString("  edge [color=\"#555555\", arrowsize=0.7];\n")
	for _, n := range nodes {
		id := dotSafe(n.ID, 80)
		fmt.Fprintf(&b, "  \"%s\" [id=\"node-%s\", class=\"st-%s\", fillcolor=\"%s\", label=\"%s\\n%s\", tooltip=\"%s: %s\", URL=\"/issue/%s\"];\n",
			id, id, n.State, n.Colour(), id, dotSafe(n.Title, 40), id, n.State, id)
	}
	for _, n := range nodes {
		for _, d := range n.Deps {
			// An edge from the blocker to the issue it blocks.
			fmt.Fprintf(&b, "  \"%s\" -> \"%s\";\n", dotSafe(d, 80), dotSafe(n.ID, 80))
		}
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// renderer runs Graphviz dot and remembers the last result, so an
// unchanged graph is never laid out twice.
type renderer struct {
	dot string // the dot executable; "" when not installed

	mu      sync.Mutex
	lastKey [32]byte
	lastSVG []byte
}

func newRenderer(dot string) *renderer {
	if dot == "" {
		if p, err := exec.LookPath("dot"); err == nil {
			dot = p
		}
	} else if dot == "none" {
		dot = ""
	}
	return &renderer{dot: dot}
}

// svg lays the graph out with dot. It returns nil and no error when dot is
// not installed.
func (r *renderer) svg(ctx context.Context, nodes []Node) ([]byte, error) {
	if r.dot == "" || len(nodes) == 0 {
		return nil, nil
	}
	src := DOT(nodes)
	key := sha256.Sum256(src)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastSVG != nil && key == r.lastKey {
		return r.lastSVG, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := proc.Command(ctx, time.Second, r.dot, "-Tsvg")
	cmd.Stdin = bytes.NewReader(src)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("graphviz dot: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	svg := out.Bytes()
	// Inline the <svg> element only: drop the XML prolog and doctype.
	if i := bytes.Index(svg, []byte("<svg")); i >= 0 {
		svg = svg[i:]
	}
	r.lastKey, r.lastSVG = key, svg
	return svg, nil
}
