package guard

import (
	"maps"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/beads"
)

// agentSwitches are the flags AgentWrites writes without a value, as
// beads.Write.Effects reads them (a claim, a notes clear).
var agentSwitches = map[string]bool{"claim": true, "clear-notes": true}

// agentGlobals are bd's global flags, which change no issue.
var agentGlobals = map[string]bool{"json": true, "actor": true, "db": true, "quiet": true, "verbose": true, "sandbox": true, "no-daemon": true, "allow-stale": true}

// AgentWrites returns the writes a bd call of an agent's makes, one per
// issue its argv names, in the canonical form beads.Write.Effects reads
// (the command path, the issue, then each flag as --name=value): what the
// tracker reads may take as explained on an issue ralphd re-reads while
// the agent's call runs. Only a call the guard allowed is told (RunGuard),
// and its effects explain only the exact field and value its argv sets,
// so a change made around the guard on the same issue is still found. A
// call that changes no issue its argv names, or that does not parse,
// returns none.
func AgentWrites(argv []string) []*beads.Write {
	c, err := ParseArgs(argv)
	if err != nil || len(c.Path) == 0 {
		return nil
	}
	var flags []string
	for _, name := range slices.Sorted(maps.Keys(c.Flags)) {
		if agentGlobals[name] {
			continue
		}
		for _, v := range c.Flags[name] {
			switch {
			case agentSwitches[name] && v == "true":
				flags = append(flags, "--"+name)
			case agentSwitches[name]:
			default:
				flags = append(flags, "--"+name+"="+v)
			}
		}
	}
	pos := c.Positionals
	var out []*beads.Write
	add := func(args ...string) {
		if len(beads.WriteTargets(args)) > 0 {
			out = append(out, &beads.Write{Args: args})
		}
	}
	switch cmd := strings.Join(c.Path, " "); cmd {
	case "update", "close", "reopen":
		for _, id := range pos {
			add(append([]string{cmd, id}, flags...)...)
		}
	case "label add", "label remove":
		if len(pos) >= 2 {
			for _, id := range pos[:len(pos)-1] {
				add(c.Path[0], c.Path[1], id, pos[len(pos)-1])
			}
		}
	case "comments add":
		if len(pos) == 2 {
			add("comments", "add", pos[0], pos[1])
		}
	case "dep add", "dep remove":
		if len(pos) == 2 {
			add("dep", c.Path[1], pos[0], pos[1])
		}
	case "create":
		args := []string{"create"}
		for _, id := range c.Flags["id"] {
			args = append(args, "--id", id)
		}
		for _, l := range c.Flags["labels"] {
			args = append(args, "--labels", l)
		}
		add(args...)
	}
	return out
}
