package guard

import (
	"slices"
	"strings"
)

// DenyPrefixes compiles the policy table into the command prefixes the
// mode refuses outright, such as "bd delete" and "bd dep remove" and their
// aliases ("bd dep rm"). It is layer 2's one input: each agent backend
// turns these prefixes into its own permission rules (Claude Code deny
// rules, Codex execpolicy rules, opencode permission.bash, a Gemini policy
// file). Refused flags of allowed commands (`bd update --priority`) get no
// prefix: a lexical rule cannot tell a flag from the same text inside a
// note, so the hook and the guard, which parse the call, refuse those.
// PLAN refuses nothing.
func DenyPrefixes(mode Mode) []string {
	if mode == ModePlan {
		return nil
	}
	var out []string
	for _, p := range policy {
		if p.allow || p.path == "" {
			continue
		}
		out = append(out, "bd "+p.path)
		c := lookup(p.path)
		if c == nil {
			continue
		}
		parent := lookup(parentOf(p.path))
		for alias, child := range parent.children {
			if child == c && alias != c.name {
				prefix := strings.TrimSpace("bd " + parentOf(p.path) + " " + alias)
				out = append(out, prefix)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
