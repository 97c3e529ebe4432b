#!/usr/bin/env bash
# The Temporal engine's module (temporal/, a module of its own so that the
# main module gains no dependency): gofmt, vet, the child-workflow example
# and the race tests, against Temporal servers started in process
# (go.temporal.io/server/temporaltest). The server needs a newer Go than the
# main module's: GOTOOLCHAIN is set for this module only. Its first build
# takes minutes (about 10 on 2 busy cores, 1.6 GB); the Go build cache keeps
# it, so later runs take well under one.
set -euo pipefail
cd "$(dirname "$0")/../temporal"
export GOTOOLCHAIN=go1.27.3 GOFLAGS=-mod=readonly
go version

echo "== temporal: gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then echo "not formatted:"; echo "$unformatted"; exit 1; fi

echo "== temporal: go vet"
go vet ./...

echo "== temporal: example childworkflow (a Temporal workflow runs a swarm as its child)"
out=$(go run ./examples/childworkflow 2>&1) || { echo "$out"; echo "example childworkflow failed"; exit 1; }
echo "$out" | tail -n 3

echo "== temporal: tests"
go test -race -count=1 -timeout 20m ./...
