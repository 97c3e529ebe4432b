#!/bin/sh
# A command tool with a side effect, made idempotent by its key: the first
# attempt of a call performs the effect and stores the result; a repeat of
# the same call returns the stored result without performing it again.
# Attempts of one call may run at the same time (a node frozen past its
# lease goes on with a call that the run's new owner repeats), so the key is
# claimed atomically (mkdir): the attempt that claims it performs the
# effect, the others wait for its result.
set -eu
dir="$EFFECTS"
key=$(printf '%s' "$SWARM_IDEMPOTENCY_KEY" | tr '/' '_')
args=$(cat)
echo "invoke $SWARM_IDEMPOTENCY_KEY" >> "$dir/invocations.log"
sleep "${TOOL_SLEEP:-0.05}"
if mkdir "$dir/$key.claim" 2>/dev/null; then
  echo "effect $SWARM_IDEMPOTENCY_KEY" >> "$dir/effects.log"
  printf 'booked %s' "$args" > "$dir/$key.tmp"
  mv "$dir/$key.tmp" "$dir/$key.result"
else
  n=0
  while [ ! -f "$dir/$key.result" ]; do
    n=$((n + 1))
    if [ "$n" -gt 800 ]; then
      echo "no result for $SWARM_IDEMPOTENCY_KEY from the attempt that claimed it" >&2
      exit 1
    fi
    sleep 0.01
  done
fi
cat "$dir/$key.result"
