#!/bin/sh
# A command tool with a side effect, made idempotent by its key: the first
# attempt of a call performs the effect and stores the result; a repeat of
# the same call returns the stored result without performing it again.
set -eu
dir="$EFFECTS"
key=$(printf '%s' "$SWARM_IDEMPOTENCY_KEY" | tr '/' '_')
args=$(cat)
echo "invoke $SWARM_IDEMPOTENCY_KEY" >> "$dir/invocations.log"
sleep "${TOOL_SLEEP:-0.05}"
if [ -f "$dir/$key.result" ]; then
  cat "$dir/$key.result"
  exit 0
fi
echo "effect $SWARM_IDEMPOTENCY_KEY" >> "$dir/effects.log"
printf 'booked %s' "$args" > "$dir/$key.tmp"
mv "$dir/$key.tmp" "$dir/$key.result"
cat "$dir/$key.result"
