package guard

import (
	"fmt"
	"strings"
)

// Mode is the loop mode the guard enforces.
type Mode string

// The two loop modes.
const (
	ModeBuild Mode = "build"
	ModePlan  Mode = "plan"
)

// ParseMode parses a mode name, case-insensitively. "planning" is accepted
// for "plan".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "build":
		return ModeBuild, nil
	case "plan", "planning":
		return ModePlan, nil
	}
	return "", fmt.Errorf("parse mode %q: want build or plan", s)
}

// Valid reports whether m is ModeBuild or ModePlan.
func (m Mode) Valid() bool { return m == ModeBuild || m == ModePlan }

// label is the mode's name as the agent's prompt spells it.
func (m Mode) label() string {
	switch m {
	case ModeBuild:
		return "BUILD"
	case ModePlan:
		return "PLANNING"
	}
	return fmt.Sprintf("unknown (%q)", string(m))
}
