#!/bin/sh
# A command tool with a side effect, made idempotent by its key: the first
# attempt of a call performs the effect; a repeat of the same call answers
# the same result without performing it again. The effect (a line in
# effects.log) is its own record, written in one append, so an attempt
# killed at any point has either made it or not. Attempts of one call may
# run at the same time (a node frozen past its lease goes on with a call
# that the run's new owner repeats), so each holds the key's lock (flock)
# while it looks for the effect and makes it; the kernel releases the lock
# of an attempt that is killed.
set -eu
dir="$EFFECTS"
key=$(printf '%s' "$SWARM_IDEMPOTENCY_KEY" | tr '/' '_')
args=$(cat)
echo "invoke $SWARM_IDEMPOTENCY_KEY" >> "$dir/invocations.log"
sleep "${TOOL_SLEEP:-0.05}"
exec 9>"$dir/$key.lock"
flock 9
if [ -n "${TOOL_HOLD:-}" ]; then # tests: be killed while holding the key
  echo holding >&2
  sleep "$TOOL_HOLD"
fi
if ! grep -qxF "effect $SWARM_IDEMPOTENCY_KEY" "$dir/effects.log" 2>/dev/null; then
  echo "effect $SWARM_IDEMPOTENCY_KEY" >> "$dir/effects.log"
fi
printf 'booked %s' "$args"
