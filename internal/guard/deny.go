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
// The forge verbs RuleForgeMerge refuses outright ("gh pr merge", "tea pr
// approve", …; forge.go) are refused in every mode; PLAN refuses no bd
// command.
func DenyPrefixes(mode Mode) []string {
	out := forgeDenyPrefixes()
	if mode == ModePlan {
		slices.Sort(out)
		return slices.Compact(out)
	}
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

// DenyMessages are the messages an agent's permission system shows for
// the prefixes of DenyPrefixes that are not bd's: the forge verbs, refused
// in every mode by RuleForgeMerge, with what to do instead.
func DenyMessages() map[string]string {
	r := ruleByID(RuleForgeMerge)
	out := map[string]string{}
	for _, p := range forgeDenyPrefixes() {
		out[p] = "ralphd: `" + p + "` is refused in every mode (rule " + r.ID + "): " + r.Reason + ". Instead: " + r.Instead
	}
	return out
}
