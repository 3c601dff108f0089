#!/usr/bin/env bash
# The bash loop ralphd is compared with (scripts/bench, figure 2).
#
# It does, per BUILD iteration, what the beads-loop method's loop.sh does
# (maxinflection/how-to-ralph-w-beads, files/loop.sh, build mode): count the
# ready work (bd ready --json | jq length), take the first ready id
# (bd ready --json | jq -r '.[0].id'), check and bump its attempts in an
# attempts file (grep, grep -v > tmp, mv), show the ready queue
# (bd ready | head -5), render the prompt (sed) into the agent, then read the
# issue's status (bd show --json | jq) and reset its attempts when it is
# closed. Functions and commands are kept as loop.sh writes them.
#
# Left out, as ralphd does neither: `bd sync` (bd 1.0.5 has no sync
# command) and `git push` after every iteration.
#
# With LOOP_LEAN=1 it is the leanest bash loop with the same features
# instead: one `bd ready --json` per iteration (count and first id from the
# same output) and no queue display.
#
# Usage: loop.sh MAX_ITERATIONS AGENT_COMMAND
# The agent runs with `sh -c`, the prompt on its stdin and RALPH_ISSUE_ID,
# RALPH_MODE and RALPH_ATTEMPT in its environment, as under ralphd.
# PROMPT_FILE names the prompt (default: a one-line prompt); ATTEMPT_FILE the
# attempts file (default: under $XDG_STATE_HOME).
set -euo pipefail

MAX_ITERATIONS=${1:?usage: loop.sh MAX_ITERATIONS AGENT_COMMAND}
AGENT_CMD=${2:?usage: loop.sh MAX_ITERATIONS AGENT_COMMAND}
STATE_DIR="${XDG_STATE_HOME:-$HOME/.local/state}/ralph-bench-loop"
ATTEMPT_FILE="${ATTEMPT_FILE:-$STATE_DIR/attempts.txt}"
MAX_STUCK_ATTEMPTS=3
RALPH_SCOPE="${RALPH_SCOPE:-}"
LOOP_LEAN="${LOOP_LEAN:-0}"
mkdir -p "$STATE_DIR" "$(dirname "$ATTEMPT_FILE")"
if [ -z "${PROMPT_FILE:-}" ]; then
	PROMPT_FILE="$STATE_DIR/PROMPT_build.md"
	echo 'Work on the first issue of bd ready${RALPH_SCOPE}.' >"$PROMPT_FILE"
fi

ensure_int() {
	local val="${1:-0}"
	if [[ "$val" =~ ^[0-9]+$ ]]; then
		echo "$val"
	else
		echo "0"
	fi
}

get_ready_issue() {
	bd ready --json 2>/dev/null | jq -r '.[0].id // empty'
}

get_attempts() {
	local issue_id="$1"
	local val
	val=$(grep "^${issue_id}:" "$ATTEMPT_FILE" 2>/dev/null | cut -d: -f2 || echo 0)
	ensure_int "$val"
}

increment_attempts() {
	local issue_id="$1"
	local current_attempts
	current_attempts=$(get_attempts "$issue_id")
	local new_attempts=$((current_attempts + 1))
	grep -v "^${issue_id}:" "$ATTEMPT_FILE" >"${ATTEMPT_FILE}.tmp" 2>/dev/null || true
	echo "${issue_id}:${new_attempts}" >>"${ATTEMPT_FILE}.tmp"
	mv "${ATTEMPT_FILE}.tmp" "$ATTEMPT_FILE"
	echo "$new_attempts"
}

reset_attempts() {
	local issue_id="$1"
	grep -v "^${issue_id}:" "$ATTEMPT_FILE" >"${ATTEMPT_FILE}.tmp" 2>/dev/null || true
	mv "${ATTEMPT_FILE}.tmp" "$ATTEMPT_FILE" 2>/dev/null || touch "$ATTEMPT_FILE"
}

check_stuck() {
	local issue_id="$1"
	local attempts
	attempts=$(get_attempts "$issue_id")
	if [ "$attempts" -ge "$MAX_STUCK_ATTEMPTS" ]; then
		echo "[WARN] Issue $issue_id stuck after $attempts attempts"
		bd update "$issue_id" --notes "STUCK: Failed after $attempts attempts at $(date). Moving to next issue." 2>/dev/null || true
		reset_attempts "$issue_id"
		return 0
	fi
	return 1
}

touch "$ATTEMPT_FILE"
ITERATION=0
while true; do
	if [ "$MAX_ITERATIONS" -gt 0 ] && [ "$ITERATION" -ge "$MAX_ITERATIONS" ]; then
		echo "[SUCCESS] Reached max iterations: $MAX_ITERATIONS"
		break
	fi

	if [ "$LOOP_LEAN" = 1 ]; then
		READY=$(bd ready --json 2>/dev/null)
		READY_COUNT=$(jq 'length // 0' <<<"$READY")
	else
		READY_COUNT=$(bd ready --json 2>/dev/null | jq 'length // 0')
	fi
	if [ "$READY_COUNT" -eq 0 ]; then
		echo "[SUCCESS] No ready work remaining - loop complete!"
		break
	fi
	if [ "$LOOP_LEAN" = 1 ]; then
		CURRENT_ISSUE=$(jq -r '.[0].id // empty' <<<"$READY")
	else
		CURRENT_ISSUE=$(get_ready_issue)
	fi
	ATTEMPTS=0
	if [ -n "$CURRENT_ISSUE" ]; then
		if check_stuck "$CURRENT_ISSUE"; then
			echo "[WARN] Skipping stuck issue, trying next..."
			sleep 1
			continue
		fi
		ATTEMPTS=$(increment_attempts "$CURRENT_ISSUE")
		echo "[INFO] Working on $CURRENT_ISSUE (attempt $ATTEMPTS/$MAX_STUCK_ATTEMPTS)"
	fi

	ITERATION=$((ITERATION + 1))
	echo "=== ITERATION $ITERATION ==="
	if [ "$LOOP_LEAN" != 1 ]; then
		echo "[INFO] Ready queue:"
		bd ready 2>/dev/null | head -5 || true
	fi

	LAST_EXIT=0
	ITER_START=$(date +%s)
	sed "s/\${RALPH_SCOPE}/${RALPH_SCOPE:-}/g" "$PROMPT_FILE" |
		RALPH_ISSUE_ID="$CURRENT_ISSUE" RALPH_MODE=build RALPH_ATTEMPT="$ATTEMPTS" sh -c "$AGENT_CMD" || LAST_EXIT=$?
	ITER_END=$(date +%s)
	ITER_DURATION=$((ITER_END - ITER_START))

	if [ "$LAST_EXIT" -ne 0 ]; then
		echo "[WARN] Iteration ended with exit code $LAST_EXIT after ${ITER_DURATION}s"
	elif [ -n "${CURRENT_ISSUE:-}" ]; then
		ISSUE_STATUS=$(bd show "$CURRENT_ISSUE" --json 2>/dev/null | jq -r '(if type == "array" then .[0] else . end) | .status // "unknown"') || ISSUE_STATUS="unknown"
		if [ "$ISSUE_STATUS" = "closed" ]; then
			echo "[SUCCESS] Issue $CURRENT_ISSUE closed successfully"
			reset_attempts "$CURRENT_ISSUE"
		fi
	fi
done
echo "Loop finished after $ITERATION iterations"
