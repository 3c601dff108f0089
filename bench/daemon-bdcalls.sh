#!/usr/bin/env bash
# daemon-bdcalls.sh RALPHD BD PROJECT SECONDS: runs `RALPHD daemon` for
# SECONDS on a copy of PROJECT (a git repository with a bd tracker) with a
# trivial agent (sleep 1, commit a file, close its issue), logs every bd
# call it and its agents make through a wrapper around BD, stops it with
# SIGTERM, and prints the iterations run and ralphd's own bd calls (the
# agents' closes left out) by subcommand, with their summed time.
# docs/benchmarks.md, "The daemon's batches", used it with a real bd 1.0.5
# on section 10's 5,000-issue tracker.
set -euo pipefail
if [ $# -ne 4 ]; then
	echo "usage: $0 RALPHD BD PROJECT SECONDS" >&2
	exit 2
fi
ralphd=$(realpath "$1") bd=$(realpath "$2") project=$3 secs=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/home" "$work/state"
cp -a "$project" "$work/proj"
cat > "$work/bin/bd" <<WRAP
#!/usr/bin/env bash
s=\$(date +%s.%N)
"$bd" "\$@"; rc=\$?
echo "\$s \$(date +%s.%N) \$rc \$*" >> "$work/calls.log"
exit \$rc
WRAP
chmod +x "$work/bin/bd"
agent='if [ -n "$RALPH_ISSUE_ID" ]; then sleep 1; echo "$RALPH_ISSUE_ID" > "$RALPH_ISSUE_ID.txt"; git add -A && git commit -q -m "$RALPH_ISSUE_ID" && bd close "$RALPH_ISSUE_ID" --reason "tests pass (exit 0)"; fi'
cd "$work/proj"
env -i PATH="$work/bin:$PATH" HOME="$work/home" XDG_STATE_HOME="$work/state" RALPH_SANDBOX=off \
	GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost \
	"$ralphd" daemon --bd "$work/bin/bd" --agent-cmd "$agent" --plan-every 0 > "$work/out.txt" 2> "$work/err.txt" &
pid=$!
sleep "$secs"
kill -TERM "$pid"
wait "$pid" || true
echo "iterations: $(grep -c 'done issue' "$work/err.txt" || true)"
awk '$4 != "close" {
	k = $4; if (k == "list" && $0 ~ /--updated-after/) k = "list --updated-after"
	n[k]++; t[k] += $2 - $1; T += $2 - $1
} END {
	for (k in n) printf "  bd %s: %d calls, %.1f s\n", k, n[k], t[k]
	printf "ralphd own bd time: %.1f s\n", T
}' "$work/calls.log"
