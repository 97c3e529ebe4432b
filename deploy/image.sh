#!/usr/bin/env bash
# Builds the swarm server image with Podman, pulling nothing:
#
#   deploy/image.sh [TAG] [VERSION]      # default TAG swarm:dev, VERSION dev
#
# The binary is built here (static: CGO_ENABLED=0, the SQLite driver is
# pure Go), the CA certificates come from this machine's ca-certificates
# package (/etc/ssl/certs/ca-certificates.crt), and deploy/Containerfile
# copies them onto an empty base (FROM scratch) with the build's network
# off. PODMAN may hold podman with flags (as .ci/ship.sh sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-swarm:dev}
version=${2:-dev}
podman=${PODMAN:-podman}
certs=/etc/ssl/certs/ca-certificates.crt
[ -s "$certs" ] || { echo "image.sh: no $certs (apt-get install ca-certificates)" >&2; exit 1; }
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root=$ctx/rootfs
mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$ctx/data"
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
  -ldflags "-s -w -X github.com/swarmrt/swarm/internal/cli.Version=$version" -o "$root/swarm" ./cmd/swarm
cp "$certs" "$root/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/:/sbin/nologin\nswarm:x:65532:65532:swarm:/data:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nswarm:x:65532:\n' >"$root/etc/group"
# A file in /data, so that a new named volume is filled from the image
# (podman copies up only what is there) and takes its owner.
echo "The swarm server's data: runs.db (SQLite)." >"$ctx/data/README"
chmod 1777 "$root/tmp"
cp deploy/Containerfile "$ctx/Containerfile"
$podman build --network=none --pull=never --format docker -t "$tag" -f "$ctx/Containerfile" "$ctx"
