package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Hook exit codes, as Claude Code reads them: 0 lets the tool call run,
// 2 blocks it and feeds stderr back to the model. Any other code would let
// the call run, so the hook never returns one.
const (
	HookAllow = 0
	HookBlock = 2
)

// maxHookInput bounds how much hook input is read.
const maxHookInput = 16 << 20

// hookInput is the part of Claude Code's PreToolUse hook input the guard
// reads (see testdata/claude-hook-pretooluse-input.json). Codex's hooks send
// the same shape.
type hookInput struct {
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
}

// Hook is the PreToolUse hook (`ralphd hook pre-tool-use`). It reads the
// hook JSON from stdin, finds every bd call and every forge CLI call in the
// tool's shell command with a real shell parser, and applies the policy of
// mode to each bd call and RuleForgeMerge, in every mode, to each forge
// CLI call (forge.go). It returns
// HookBlock with the reasons on stderr when any call is refused, and
// HookAllow otherwise. It fails closed: input it cannot read, a Bash call
// without a command, shell text it cannot parse, or an unknown mode all
// block the call with an explanation.
func Hook(ctx context.Context, mode Mode, stdin io.Reader, stdout, stderr io.Writer) int {
	block := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "ralphd hook: "+format+"\n", a...)
		return HookBlock
	}
	if !mode.Valid() {
		return block("the guard mode %q is neither build nor plan; blocking every tool call to be safe. "+
			"Run the agent through ralphd.", string(mode))
	}
	data, err := io.ReadAll(io.LimitReader(stdin, maxHookInput+1))
	if err != nil {
		return block("cannot read the hook input: %v; blocking the tool call to be safe", err)
	}
	if len(data) > maxHookInput {
		return block("the hook input is larger than %d bytes; blocking the tool call to be safe", maxHookInput)
	}
	if err := ctx.Err(); err != nil {
		return block("interrupted: %v", err)
	}
	var in hookInput
	if err := json.Unmarshal(data, &in); err != nil {
		return block("the hook input is not valid JSON (%v); blocking the tool call to be safe", err)
	}
	if in.HookEventName != "" && in.HookEventName != "PreToolUse" {
		return HookAllow
	}
	script, argv, present, err := toolCommand(in.ToolInput)
	if err != nil {
		return block("cannot read tool_input.command of %s: %v; blocking the tool call to be safe", in.ToolName, err)
	}
	if !present {
		if strings.EqualFold(in.ToolName, "Bash") {
			return block("the Bash call has no command to check; blocking it to be safe")
		}
		return HookAllow
	}
	var calls []shellCall
	if argv != nil {
		x := &extractor{}
		err = x.command(staticArgs(argv), nil, 0)
		calls = x.calls
	} else {
		calls, err = extractCalls(script)
	}
	if err != nil {
		return block("cannot analyse this shell command, so its bd and forge CLI calls cannot be checked: %v. "+
			"Blocked to be safe; write the call as a plain command.", err)
	}
	var refused []Decision
	for _, c := range calls {
		var d Decision
		switch {
		case c.name != "bd":
			d = forgeDecide(mode, c.name, c.args) // the same in every mode
			if !d.Allowed {
				d.line = c.prog + strings.TrimPrefix(d.CommandLine(), c.name)
			}
		case mode == ModePlan:
			continue // PLANNING may run any bd command
		default:
			d = decide(mode, c.args)
			if c.heuristic && !isCommandRule(d.Rule) {
				continue
			}
			d.line = c.prog + strings.TrimPrefix(d.CommandLine(), "bd")
		}
		if !d.Allowed {
			refused = append(refused, d)
		}
	}
	if len(refused) == 0 {
		return HookAllow
	}
	fmt.Fprintf(stderr, "ralphd blocked this command: it runs %s that %s mode does not allow.\n",
		plural(len(refused), "a call", "calls"), mode.label())
	for _, d := range refused {
		fmt.Fprint(stderr, d.Message())
	}
	return HookBlock
}

// toolCommand extracts tool_input.command: shell text, or an argv array
// (as some agents send). present is false when there is no command field.
func toolCommand(raw json.RawMessage) (script string, argv []string, present bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, false, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return "", nil, false, fmt.Errorf("tool_input is not an object: %w", err)
	}
	cmd, ok := fields["command"]
	if !ok || string(cmd) == "null" {
		return "", nil, false, nil
	}
	if err := json.Unmarshal(cmd, &script); err == nil {
		return script, nil, true, nil
	}
	if err := json.Unmarshal(cmd, &argv); err == nil {
		if argv == nil {
			argv = []string{}
		}
		return "", argv, true, nil
	}
	return "", nil, true, fmt.Errorf("command is neither a string nor a list of strings")
}

// isCommandRule reports whether a refusal is about a real bd command or
// flag rather than about text ralphd could not recognise; only those count
// for calls found heuristically.
func isCommandRule(rule string) bool {
	switch rule {
	case RuleUnknownCommand, RuleUnknownFlag, RuleBadArgv, RuleDynamic, RuleFlag:
		return false
	}
	return true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf("%d %s", n, many)
}
