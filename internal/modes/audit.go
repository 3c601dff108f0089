package modes

import (
	"fmt"
	"strings"

	"github.com/ralphd/ralphd/internal/guard"
)

// bypasses returns, for the shell commands an agent reported running, the
// bd calls BUILD's policy refuses that did not go through the guard: bd run
// by a path ("/usr/local/bin/bd", "$RALPHD_REAL_BD") rather than as `bd`
// from the agent's PATH. Those should have been refused but ran. (A plain
// `bd …` call reached the guard, which refused it: that is audited as a
// refused bd_call, not a violation.)
func bypasses(commands []string) []string {
	// The guard's variable is a known spelling of the real bd.
	realBD := strings.NewReplacer("${"+guard.EnvRealBD+"}", "/ralphd/real/bd", "$"+guard.EnvRealBD, "/ralphd/real/bd")
	var found []string
	for _, c := range commands {
		calls, err := guard.ExtractBDCalls(realBD.Replace(c))
		if err != nil {
			continue
		}
		for _, call := range calls {
			if len(call) == 0 || call[0] == "bd" {
				continue
			}
			if d := guard.Decide(guard.ModeBuild, call[1:]); !d.Allowed {
				found = append(found, fmt.Sprintf("%s ran bd around the guard (as %s): %s", quote(c), call[0], d.Reason))
			}
		}
	}
	return found
}

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return "`" + s + "`"
}
