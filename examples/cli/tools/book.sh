#!/bin/sh
# A command tool: the model's JSON arguments arrive on stdin, the result is
# what the tool prints, and a non-zero exit is an error result. The
# idempotency key is the same on every attempt of one call, so a call that
# runs again after a crash can tell (here it only says so).
set -eu
args=$(cat)
echo "booked $args (key $SWARM_IDEMPOTENCY_KEY)"
