package agent

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// RunMarkerEnv is the environment variable Run sets, to a value unique to
// the run, in the agent's environment. Every descendant of the agent
// inherits it unless it clears its environment, so processes that left the
// agent's process group (setsid, double fork) can still be found in
// /proc/<pid>/environ and ended with the run.
const RunMarkerEnv = "RALPHD_AGENT_RUN"

// scrubbedEnv lists variables removed from the agent's environment:
// every backend's ScrubEnv (what an agent CLI sets for the commands it
// runs), and ralphd's own:
//
//   - NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID: the systemd notify
//     socket of ralphd's service; an agent must not speak for ralphd.
//   - RALPH_MODE, RALPH_ISSUE_ID, RALPH_ITERATION, RALPH_ATTEMPT and
//     RunMarkerEnv: ralphd's own per-run values; stale ones from a parent
//     must never leak into a run that does not set them.
//   - RALPH_HTTP_TOKEN: the dashboard's token; with it an agent could
//     reset its own stuck issue or pause the daemon through the dashboard.
//   - ForgeTokenEnv: the forge tokens gh and other forge clients read;
//     with one an agent could approve or merge its own pull request
//     (integrate = pr).
//
// Credentials and user configuration (ANTHROPIC_API_KEY,
// CLAUDE_CODE_USE_BEDROCK, ...) are deliberately kept.
func scrubbedEnv() []string {
	var vars []string
	for _, e := range registry() {
		vars = append(vars, e.proto.ScrubEnv()...)
	}
	return append(append(vars,
		"NOTIFY_SOCKET",
		"WATCHDOG_USEC",
		"WATCHDOG_PID",
		"RALPH_MODE",
		"RALPH_ISSUE_ID",
		"RALPH_ITERATION",
		"RALPH_ATTEMPT",
		"RALPH_HTTP_TOKEN",
		RunMarkerEnv,
	), ForgeTokenEnv...)
}

// ForgeTokenEnv lists the variables that carry a forge's token (gh's,
// GitHub Actions', ralphd's Gitea token (mergeq.GiteaTokenEnv) and tea's):
// never in an agent's environment.
var ForgeTokenEnv = []string{"GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITEA_TOKEN", "GITEA_SERVER_TOKEN", "FORGEJO_TOKEN"}

// Env is the environment Run gives an agent, without the run marker:
// base with ralphd's own variables scrubbed, extra added, and pathPrefix
// first on PATH. ralphd runs the checks of a BUILD iteration in it, so
// they have no more power than the agent.
func Env(base []string, pathPrefix string, extra []string) []string {
	return buildEnv(base, pathPrefix, extra)
}

// defaultPath is used when the base environment has no PATH at all.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// buildEnv assembles the agent's environment: base without the scrubbed
// variables, then layers (later layers win), with pathPrefix put first on
// PATH. Entries without '=' are dropped. Each variable appears once, in
// the position of its first occurrence.
func buildEnv(base []string, pathPrefix string, layers ...[]string) []string {
	idx := make(map[string]int)
	var out []string
	set := func(kv string) {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return
		}
		if i, seen := idx[k]; seen {
			out[i] = kv
			return
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	scrubbed := scrubbedEnv()
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(scrubbed, k) {
			continue
		}
		set(kv)
	}
	for _, l := range layers {
		for _, kv := range l {
			set(kv)
		}
	}
	if pathPrefix != "" {
		old := defaultPath
		if i, ok := idx["PATH"]; ok {
			old = strings.TrimPrefix(out[i], "PATH=")
		}
		dirs := []string{pathPrefix}
		clean := filepath.Clean(pathPrefix)
		for _, d := range filepath.SplitList(old) {
			if d != "" && filepath.Clean(d) == clean {
				continue
			}
			dirs = append(dirs, d)
		}
		set("PATH=" + strings.Join(dirs, string(filepath.ListSeparator)))
	}
	return out
}

// envValue returns the value of key in env, and whether it is set.
func envValue(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// ralphEnv returns the RALPH_* variables describing inv to the agent.
// RalphEnv is the RALPH_* variables an agent gets for inv (mode, issue,
// iteration, attempt); ralphd gives them to the real bd it runs for the
// agent too.
func RalphEnv(inv Invocation) []string { return ralphEnv(inv) }

func ralphEnv(inv Invocation) []string {
	return []string{
		"RALPH_MODE=" + inv.Mode,
		"RALPH_ISSUE_ID=" + inv.IssueID,
		"RALPH_ITERATION=" + strconv.Itoa(inv.Iteration),
		"RALPH_ATTEMPT=" + strconv.Itoa(inv.Attempt),
	}
}
