#!/usr/bin/env bash
# What a team that ships swarm serve relies on, checked as it would use it:
#   1. the deployment files decode strictly into the Kubernetes API types
#      and the Compose file's schema (deploy/check, a module of its own);
#   2. the exported Go API has no incompatible change since api/baseline
#      that api/breaks.txt does not list (apidiff, pinned);
#   3. the release archives cross-compile (.ci/release.sh), with checksums
#      and the version stamped;
#   4. the container image builds with Podman, pulling nothing, and a run
#      survives the container's SIGKILL: started again on the same volume,
#      the run completes;
#   5. the nodes of the Compose file run with Podman against the local
#      PostgreSQL: a run started on one node is seen on the other.
# Each step prints the seconds it took. Run from .ci/run after PostgreSQL is up.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
tmp=$(mktemp -d)
containers=()
cleanup() {
  for c in ${containers[@]+"${containers[@]}"}; do $podman rm -f -t 0 "$c" >/dev/null 2>&1 || true; done
  $podman volume rm -f swarm-ci-data >/dev/null 2>&1 || true
  $podman rmi -f localhost/swarm:ci >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
podman=podman
trap cleanup EXIT
t0=$(date +%s)
step() { echo "== ship: $1 ($(($(date +%s) - t0))s so far)"; }
fail() { echo "ship: $*" >&2; exit 1; }

# Podman and runc from Debian's packages. Flags for this machine, found by
# trying: crun refuses the hybrid cgroup hierarchy (runc accepts it);
# there is no systemd (cgroupfs, events in a file, health checks run by
# hand); setting RLIMIT_NOFILE and RLIMIT_NPROC above the current limits
# is not permitted (CAP_SYS_RESOURCE is missing), so the containers get
# limits at or below them. zip packs the windows archives.
if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v zip >/dev/null; then
  apt-get update && apt-get install -y podman runc zip
fi
podman="podman --runtime runc --cgroup-manager cgroupfs --events-backend file"
export PODMAN=$podman
nofile=$(ulimit -n)
limits=(--ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}
# wait_url URL: until it answers 200, at most a minute.
wait_url() {
  for _ in $(seq 1 300); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.2; done
  return 1
}

step "deployment files (deploy/check)"
(cd deploy/check && go run . kubernetes ../kubernetes && go run . compose ../compose.yaml)

step "exported Go API against api/baseline (apidiff)"
# golang.org/x/exp has no tags: the pinned pseudo-version is the apidiff
# that wrote api/baseline.
GOFLAGS= GOBIN="$tmp/bin" go install golang.org/x/exp/cmd/apidiff@v0.0.0-20261121134650-e1094eeca1b5
"$tmp/bin/apidiff" -m -incompatible api/baseline github.com/swarmrt/swarm 2>/dev/null >"$tmp/apidiff.txt" ||
  fail "apidiff failed: $("$tmp/bin/apidiff" -m -incompatible api/baseline github.com/swarmrt/swarm 2>&1 | tail -5)"
sed -n 's/^- //p' "$tmp/apidiff.txt" | sort -u >"$tmp/breaks"
sed -e '/^#/d' -e '/^[[:space:]]*$/d' api/breaks.txt | sort -u >"$tmp/logged"
unlogged=$(comm -23 "$tmp/breaks" "$tmp/logged")
if [ -n "$unlogged" ]; then
  echo "Incompatible changes to the exported Go API since api/baseline:" >&2
  echo "$unlogged" | sed 's/^/  /' >&2
  fail "a break must be deliberate: add these lines to api/breaks.txt and describe them under Breaking in CHANGELOG.md"
fi
echo "apidiff: $(wc -l <"$tmp/breaks") incompatible change(s) since the baseline, all listed in api/breaks.txt"

step "release archives (.ci/release.sh)"
.ci/release.sh v0.0.0-ci "$tmp/dist"
(cd "$tmp/dist" && sha256sum -c --quiet SHA256SUMS && test "$(ls swarm_v0.0.0-ci_* | wc -l)" = 6) || fail "release archives or checksums wrong"
tar -xzf "$tmp/dist/swarm_v0.0.0-ci_linux_amd64.tar.gz" -C "$tmp"
"$tmp/swarm_v0.0.0-ci_linux_amd64/swarm" version | grep -q '^swarm v0.0.0-ci, ' || fail "the release binary does not name its version"

step "container image (deploy/image.sh)"
deploy/image.sh localhost/swarm:ci v0.0.0-ci
$podman image inspect localhost/swarm:ci --format '{{.Config.User}} {{json .Config.Healthcheck.Test}}' | tee "$tmp/inspect"
grep -q '^65532:65532 \["CMD","/swarm","healthcheck"' "$tmp/inspect" || fail "image: not the non-root user or the health check"
$podman run --rm --network none "${limits[@]}" localhost/swarm:ci version | grep -q '^swarm v0.0.0-ci, ' ||
  fail "image: swarm version does not name v0.0.0-ci"
if $podman run --rm --network none "${limits[@]}" --entrypoint /bin/sh localhost/swarm:ci -c true >/dev/null 2>&1; then
  fail "image: has a shell"
fi

step "container crash: SIGKILL mid-run, started again on the same volume"
port=$(free_port 18480)
token=ci:ship-ci-token-0123456789:*
auth=(-H "Authorization: Bearer ship-ci-token-0123456789")
node() { # node NAME: the image's own command, on loopback, the lease short
  containers+=("$1")
  $podman run -d --name "$1" --network host "${limits[@]}" -e "SWARM_TOKENS=$token" \
    -v swarm-ci-data:/data -v "$root/deploy/example:/etc/swarm:ro" \
    --health-cmd "[\"/swarm\",\"healthcheck\",\"--addr\",\"127.0.0.1:$port\"]" --health-interval disable \
    localhost/swarm:ci serve --file /etc/swarm/swarm.yaml --addr "127.0.0.1:$port" --lease 3s >/dev/null
  wait_url "http://127.0.0.1:$port/readyz" || { $podman logs "$1"; fail "$1 did not become ready"; }
  $podman healthcheck run "$1" >/dev/null || fail "$1: health check failed"
}
# Leftovers of an interrupted earlier run go first.
$podman rm -f -t 0 swarm-ci-1 swarm-ci-2 swarm-node1 swarm-node2 >/dev/null 2>&1 || true
$podman volume rm -f swarm-ci-data >/dev/null 2>&1 || true
node swarm-ci-1
curl -fsS "${auth[@]}" -H 'Content-Type: application/json' -d '{"id":"crash-1","input":"durable execution"}' \
  "http://127.0.0.1:$port/v1/swarms/hello/runs" >/dev/null
# Kill it once its first turn is journaled: the run is mid-way (each of its
# four turns waits a second or two for the scripted model).
for _ in $(seq 1 150); do
  status=$(curl -fsS "${auth[@]}" "http://127.0.0.1:$port/v1/runs/crash-1")
  echo "$status" | grep -Eq '"turn": *[1-9]' && break
  sleep 0.2
done
echo "$status" | grep -Eq '"state": *"running"' || fail "crash-1 before the kill is not running: $status"
$podman kill -s KILL swarm-ci-1 >/dev/null
$podman rm -f swarm-ci-1 >/dev/null
echo "killed the container with crash-1 running: $status"
node swarm-ci-2
status=$(curl -fsS "${auth[@]}" "http://127.0.0.1:$port/v1/runs/crash-1?wait=60s")
echo "$status" | grep -Eq '"state": *"completed"' || { $podman logs swarm-ci-2; fail "crash-1 after the restart: $status"; }
echo "crash-1 completed in a new container on the same volume: $status"

step "compose nodes on the local PostgreSQL"
if ! (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then
  fail "PostgreSQL is not up on 127.0.0.1:5432"
fi
schema=swarm_ship_ci
PGOPTIONS=--client-min-messages=warning psql -v ON_ERROR_STOP=1 -h 127.0.0.1 -d test -qc "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
store="postgres://$(id -un)@127.0.0.1:5432/test?sslmode=disable&search_path=$schema"
p1=$(free_port $((port + 1)))
p2=$(free_port $((p1 + 1)))
for n in node1:$p1 node2:$p2; do
  mapfile -t args < <(cd deploy/check && SWARM_TOKENS=$token go run . podman ../compose.yaml "${n%:*}" \
    "SWARM_STORE=$store" "--addr=127.0.0.1:${n#*:}")
  containers+=("swarm-${n%:*}")
  $podman run -d "${limits[@]}" --health-interval disable "${args[@]/localhost\/swarm:dev/localhost/swarm:ci}" >/dev/null
done
for p in $p1 $p2; do wait_url "http://127.0.0.1:$p/readyz" || { $podman logs swarm-node1; fail "node on $p not ready"; }; done
curl -fsS "${auth[@]}" -H 'Content-Type: application/json' -d '{"id":"compose-1","input":"two nodes"}' \
  "http://127.0.0.1:$p1/v1/swarms/hello/runs" >/dev/null
status=$(curl -fsS "${auth[@]}" "http://127.0.0.1:$p2/v1/runs/compose-1?wait=60s")
echo "$status" | grep -Eq '"state": *"completed"' || fail "compose-1 seen on node2: $status"
echo "compose-1, started on node1, seen completed on node2"
PGOPTIONS=--client-min-messages=warning psql -v ON_ERROR_STOP=1 -h 127.0.0.1 -d test -qc "DROP SCHEMA $schema CASCADE"

echo "ship: all checks passed in $(($(date +%s) - t0))s"
