#!/bin/sh
# A command tool: the model's JSON arguments arrive on stdin, the result is
# what the tool prints, and a non-zero exit is an error result given back to
# the model. SWARM_IDEMPOTENCY_KEY is the same on every attempt of one call,
# so a tool with side effects can tell a repeat after a crash.
set -eu
args=$(cat)
echo "noted $args (key $SWARM_IDEMPOTENCY_KEY)"
