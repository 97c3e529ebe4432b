#!/bin/sh
# A command tool with a side effect, made idempotent by its key: the first
# attempt of a call performs the effect and stores the result; a repeat of
# the same call returns the stored result without performing it again.
# Attempts of one call may run at the same time (a node frozen past its
# lease goes on with a call that the run's new owner repeats), so each
# holds the key's lock (flock) while it checks for a result and acts. The
# kernel releases the lock of an attempt that is killed, so a repeat then
# performs the effect itself.
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
if [ ! -f "$dir/$key.result" ]; then
  echo "effect $SWARM_IDEMPOTENCY_KEY" >> "$dir/effects.log"
  printf 'booked %s' "$args" > "$dir/$key.tmp"
  mv "$dir/$key.tmp" "$dir/$key.result"
fi
cat "$dir/$key.result"
