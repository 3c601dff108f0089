package logjsonl

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// This file renders the stream lines of the agent CLIs other than Claude
// Code: Codex (`codex exec --json`), opencode (`opencode run --format
// json`) and Gemini CLI (`--output-format stream-json`). Each line is
// recognised by its type and the fields only that CLI writes; anything
// else falls through to the raw view.

// otherAgentLine renders a line of Codex, opencode or Gemini CLI and
// reports whether it was one.
func (rd *renderer) otherAgentLine(rec gjson.Result) bool {
	typ := rec.Get("type").String()
	switch {
	case codexTypes[typ]:
		rd.codex(typ, rec)
	case typ == "error" && rec.Get("message").Exists() && !rec.Get("sessionID").Exists():
		rd.lastError = rec.Get("message").String()
		rd.println(red, oneLine("  ! "+rd.lastError))
	case rec.Get("sessionID").Exists() && (rec.Get("part").Exists() || typ == "error" || typ == "done"):
		rd.opencode(typ, rec)
	case rec.Get("timestamp").Type == gjson.String && (typ == "init" || typ == "message" || typ == "tool_use" ||
		typ == "tool_result" || typ == "error" || typ == "result"):
		rd.gemini(typ, rec)
	default:
		return false
	}
	return true
}

// codexTypes are the event types of `codex exec --json`.
var codexTypes = map[string]bool{
	"thread.started": true, "turn.started": true, "turn.completed": true, "turn.failed": true,
	"item.started": true, "item.updated": true, "item.completed": true,
}

// codex renders a `codex exec --json` event.
func (rd *renderer) codex(typ string, rec gjson.Result) {
	switch typ {
	case "thread.started":
		rd.println(dim, oneLine("  · codex session "+rec.Get("thread_id").String()))
	case "turn.completed":
		u := rec.Get("usage")
		rd.println(dim, oneLine("  · turn done: "+plural(u.Get("input_tokens").Int(), "input token")+", "+
			plural(u.Get("output_tokens").Int(), "output token")))
	case "turn.failed":
		rd.lastError = rec.Get("error.message").String()
		rd.println(red, oneLine("  ! turn failed: "+rd.lastError))
	case "item.started", "item.updated", "item.completed":
		rd.codexItem(typ, rec.Get("item"))
	default:
		if rd.opts.Verbose {
			rd.println(dim, oneLine("  · "+typ))
		}
	}
}

// codexItem renders one Codex thread item.
func (rd *renderer) codexItem(typ string, it gjson.Result) {
	switch it.Get("type").String() {
	case "command_execution":
		switch {
		case typ == "item.started":
			rd.println(cyan, "  $ "+oneLine(unwrapShell(it.Get("command").String())))
		case typ == "item.completed":
			rd.shellResult(it.Get("exit_code"), it.Get("aggregated_output").String(), it.Get("status").String() == "declined")
		}
	case "agent_message":
		if typ == "item.completed" {
			rd.block(plain, "  ", it.Get("text").String())
		}
	case "reasoning":
		if typ == "item.completed" && rd.opts.Verbose {
			rd.block(dim, "  (thinking) ", it.Get("text").String())
		}
	case "error":
		if typ == "item.completed" {
			rd.println(yellow, oneLine("  ! "+it.Get("message").String()))
		}
	default:
		if typ == "item.completed" {
			rd.println(cyan, oneLine("  ▸ "+it.Get("type").String()))
		}
	}
}

// shellResult renders how a shell command ended: an error line for a
// refusal or a non-zero exit, its first output line in verbose mode.
func (rd *renderer) shellResult(exit gjson.Result, output string, declined bool) {
	first, _, _ := strings.Cut(strings.TrimSpace(output), "\n")
	first = rd.cut(first, len(first))
	switch {
	case declined || isDenial(output):
		rd.println(redBold, oneLine("  ⛔ denied: "+first))
	case exit.Exists() && exit.Type == gjson.Number && exit.Int() != 0:
		rd.println(red, oneLine("  ✗ exit "+strconv.FormatInt(exit.Int(), 10)+": "+first))
	case rd.opts.Verbose:
		rd.println(dim, oneLine("    → "+first))
	}
}

// unwrapShell shows `/bin/bash -c '<cmd>'` (how Codex reports a
// command) as <cmd>, when the quoting is the simple single-quoted kind.
func unwrapShell(cmd string) string {
	for _, sh := range []string{"/bin/bash -lc '", "/bin/bash -c '", "bash -lc '", "bash -c '", "/bin/sh -c '", "sh -c '"} {
		if rest, ok := strings.CutPrefix(cmd, sh); ok && strings.HasSuffix(rest, "'") {
			inner := strings.TrimSuffix(rest, "'")
			if !strings.Contains(inner, "'") {
				return inner
			}
			return strings.ReplaceAll(inner, `'"'"'`, "'")
		}
	}
	return cmd
}

// opencode renders an `opencode run --format json` event.
func (rd *renderer) opencode(typ string, rec gjson.Result) {
	part := rec.Get("part")
	switch typ {
	case "text":
		rd.block(plain, "  ", part.Get("text").String())
	case "reasoning":
		if rd.opts.Verbose {
			rd.block(dim, "  (thinking) ", part.Get("text").String())
		}
	case "tool_use":
		st := part.Get("state")
		tool := part.Get("tool").String()
		if tool == "bash" {
			rd.println(cyan, "  $ "+oneLine(st.Get("input.command").String()))
		} else {
			rd.println(cyan, rd.toolCall(tool, st.Get("input")))
		}
		if st.Get("status").String() == "error" {
			msg := st.Get("error").String()
			if isDenial(msg) || strings.Contains(strings.ToLower(msg), "rule") {
				rd.println(redBold, oneLine("  ⛔ denied: "+msg))
			} else {
				rd.println(red, oneLine("  ✗ "+msg))
			}
			return
		}
		rd.shellResult(st.Get("metadata.exit"), st.Get("output").String(), false)
	case "step_finish":
		t := part.Get("tokens")
		s := "  · step done: " + plural(t.Get("input").Int(), "input token") + ", " + plural(t.Get("output").Int(), "output token")
		if c := part.Get("cost"); c.Exists() {
			s += ", " + dollars(c.Float())
		}
		rd.println(dim, oneLine(s))
	case "error":
		rd.lastError = firstNonEmpty(rec.Get("error.data.message").String(), rec.Get("error.name").String())
		rd.println(red, oneLine("  ! "+rd.lastError))
	default:
		if rd.opts.Verbose {
			rd.println(dim, oneLine("  · "+typ))
		}
	}
}

// gemini renders a Gemini CLI stream-json event.
func (rd *renderer) gemini(typ string, rec gjson.Result) {
	switch typ {
	case "init":
		rd.println(dim, oneLine("  · gemini session "+rec.Get("session_id").String()+" · model "+rec.Get("model").String()))
	case "message":
		if rec.Get("role").String() != "assistant" {
			if rd.opts.Verbose {
				rd.block(dim, "  > ", rec.Get("content").String())
			}
			return
		}
		// Deltas arrive in pieces; show each piece as it came, on its
		// own, rather than guess where the sentence ends.
		rd.block(plain, "  ", rec.Get("content").String())
	case "tool_use":
		name, params := rec.Get("tool_name").String(), rec.Get("parameters")
		if name == "run_shell_command" {
			rd.println(cyan, "  $ "+oneLine(params.Get("command").String()))
		} else {
			rd.println(cyan, rd.toolCall(name, params))
		}
	case "tool_result":
		if rec.Get("status").String() == "error" {
			msg := firstNonEmpty(rec.Get("error.message").String(), rec.Get("output").String())
			if isDenial(msg) || strings.Contains(strings.ToLower(msg), "policy") {
				rd.println(redBold, oneLine("  ⛔ denied: "+msg))
			} else {
				rd.println(red, oneLine("  ✗ "+msg))
			}
			return
		}
		rd.shellResult(gjson.Result{}, rec.Get("output").String(), false)
	case "error":
		rd.lastError = rec.Get("message").String()
		rd.println(red, oneLine("  ! "+rec.Get("severity").String()+" "+rd.lastError))
	case "result":
		st := rec.Get("stats")
		s := "  · result: " + rec.Get("status").String() + " · " + plural(st.Get("input_tokens").Int(), "input token") +
			", " + plural(st.Get("output_tokens").Int(), "output token")
		if e := rec.Get("error.message").String(); e != "" {
			rd.lastError = e
			rd.println(red, oneLine(s+" · "+e))
			return
		}
		rd.println(dim, oneLine(s))
	}
}

// firstNonEmpty returns the first of ss that is not empty.
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
