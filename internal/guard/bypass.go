package guard

import (
	"fmt"
	"strings"
)

// Bypasses returns, for the shell commands an agent reported running, the
// bd calls BUILD's policy refuses that did not go through the guard: bd run
// by a path ("/usr/local/bin/bd", "$RALPHD_REAL_BD") rather than as `bd`
// from the agent's PATH. Those should have been refused but ran. (A plain
// `bd …` call reached the guard, which refused it: that is audited as a
// refused bd_call, not a violation.) Each finding is a sentence for the
// iteration's violation record.
func Bypasses(commands []string) []string {
	// The guard's variable is a known spelling of the real bd.
	realBD := strings.NewReplacer("${"+EnvRealBD+"}", "/ralphd/real/bd", "$"+EnvRealBD, "/ralphd/real/bd")
	var found []string
	for _, c := range commands {
		calls, err := ExtractBDCalls(realBD.Replace(c))
		if err != nil {
			continue
		}
		for _, call := range calls {
			if len(call) == 0 || call[0] == "bd" {
				continue
			}
			if d := Decide(ModeBuild, call[1:]); !d.Allowed {
				found = append(found, fmt.Sprintf("%s ran bd around the guard (as %s): %s", quoteCommand(c), call[0], d.Reason))
			}
		}
	}
	return found
}

// quoteCommand quotes a command for a message, cut to 200 bytes.
func quoteCommand(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return "`" + s + "`"
}
