package guard

import (
	"slices"
	"strings"
)

// denyFlagPatterns are the refused flags of allowed commands that get a
// Claude Code deny pattern. Only long flags are listed: a pattern such as
// `Bash(bd update * -p*)` would also match text inside a note ("ran go
// test -p 1") and block a legitimate call. The short forms, and every
// other evasion, are caught by the hook and the guard, which parse the
// command for real.
var denyFlagPatterns = map[string][]string{
	"update": {"--priority", "--type", "--acceptance", "--title", "--remove-label", "--set-labels",
		"--parent", "--status closed", "--status=closed"},
	"close": {"--force"},
}

// DenyPrefixes returns the command prefixes the mode refuses outright, such
// as "bd delete" and "bd dep remove", for agents whose permission systems
// match command prefixes (Codex rules, opencode permission.bash). PLAN
// refuses nothing.
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

// DisallowedTools compiles the mode's policy into Claude Code permission
// rules for --disallowedTools (or permissions.deny in a settings file):
// `Bash(bd delete:*)` for each refused command and alias, and
// `Bash(bd update * --priority*)` for the refused long flags of allowed
// commands. These rules are lexical and easy to evade (`env bd …`,
// `bd --actor x delete`); they are the first line only, and the PreToolUse
// hook and the guard are the enforcement. PLAN returns nil.
func DisallowedTools(mode Mode) []string {
	if mode == ModePlan {
		return nil
	}
	var out []string
	for _, prefix := range DenyPrefixes(mode) {
		out = append(out, "Bash("+prefix+":*)")
	}
	for cmd, flags := range denyFlagPatterns {
		for _, f := range flags {
			out = append(out, "Bash(bd "+cmd+" * "+f+"*)")
		}
	}
	slices.Sort(out)
	return out
}
