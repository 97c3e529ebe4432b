#!/usr/bin/env bash
# Builds the release archives of the swarm command, one command:
#
#   .ci/release.sh VERSION [OUTDIR]      # e.g. .ci/release.sh v0.1.0 (OUTDIR: dist/VERSION)
#
# For linux, darwin and windows on amd64 and arm64: a static binary
# (CGO_ENABLED=0; the SQLite driver is pure Go), built with -trimpath and
# the version stamped at link time (swarm version names it, with or
# without VCS information), in swarm_VERSION_OS_ARCH.tar.gz (.zip for
# windows) beside README.md and CHANGELOG.md, and SHA256SUMS over the
# archives (check with: sha256sum -c SHA256SUMS). The builds run one after
# another, to spare a small machine.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: .ci/release.sh VERSION [OUTDIR]}
case $version in v[0-9]*) ;; *) echo "release.sh: VERSION must look like v1.2.3, not $version" >&2; exit 2 ;; esac
out=${2:-dist/$version}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64; do
  os=${target%/*} arch=${target#*/}
  name=swarm_${version}_${os}_${arch}
  dir=$work/$name
  mkdir -p "$dir"
  exe=swarm
  [ "$os" = windows ] && exe=swarm.exe
  start=$(date +%s)
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
    -ldflags "-s -w -X github.com/swarmrt/swarm/internal/cli.Version=$version" \
    -o "$dir/$exe" ./cmd/swarm
  cp README.md CHANGELOG.md "$dir/"
  if [ "$os" = windows ]; then
    (cd "$work" && rm -f "$out/$name.zip" && zip -qr "$out/$name.zip" "$name")
  else
    tar -C "$work" --owner=0 --group=0 --numeric-owner -czf "$out/$name.tar.gz" "$name"
  fi
  echo "release: $name built in $(($(date +%s) - start))s"
done
(cd "$out" && sha256sum swarm_"${version}"_* >SHA256SUMS && cat SHA256SUMS)
echo "release: $out"
