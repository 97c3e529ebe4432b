#!/usr/bin/env bash
# Runs the README's commands as written: every ```sh block, in order, in one
# shell (so `cd` and background jobs carry over), in a fresh copy of the
# repository; any command that fails fails CI. (Fences without sh hold
# synopses, outputs and configuration, not commands.) What differs from a
# reader's shell:
#   - `go test` lines are skipped: .ci/run runs the tests itself;
#   - `go install` installs into a private GOBIN that is first on PATH;
#   - port 8080 becomes a free port, so CI never meets a server already there;
#   - a line whose comment says "exits N" must exit with status N;
#   - a server a block started in the background (`swarm serve ... &`) and
#     did not stop is stopped after the block, so nothing waits on it.
# The Dashboard's block runs the browser tests; their screenshots and
# figures are copied back to dashboard/e2e/out.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

copy="$tmp/repo"
mkdir -p "$copy" "$tmp/bin"
git ls-files -z --cached --others --exclude-standard |
  tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$copy"

port=18080
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done

{
  echo 'set -euxo pipefail'
  echo 'trap '\''kill $(jobs -p) 2>/dev/null || true'\'' EXIT'
  awk '
    /^```sh/ { inblock = 1; n++; print "# --- README block " n " (line " NR ")"; next }
    inblock && /^```/ { inblock = 0; print "for j in $(jobs -p); do kill \"$j\" 2>/dev/null || true; done"; next }
    inblock && /^go test/ { print "# skipped here, run by .ci/run: " $0; next }
    inblock { print }
  ' README.md |
    sed -E 's/^(.*[^[:space:]])[[:space:]]+#.*exits ([0-9]+).*$/rc=0; \1 || rc=$?; [ "$rc" -eq \2 ] || { echo "readme: exit $rc, want \2" >\&2; exit 1; }/' |
    sed "s/8080/$port/g"
} >"$tmp/readme-commands.sh"

if ! grep -q '^swarm ' "$tmp/readme-commands.sh"; then
  echo "readme: no swarm commands found in README.md's sh blocks"; exit 1
fi
if ! grep -q 'dashboard/e2e.*npm test' "$tmp/readme-commands.sh"; then
  echo "readme: the Dashboard's block (the browser tests) is missing from README.md"; exit 1
fi
echo "== README commands (port 8080 is $port here)"
cd "$copy"
env -u SWARM_MODEL -u SWARM_STORE -u OPENAI_API_KEY -u ANTHROPIC_API_KEY \
  GOBIN="$tmp/bin" PATH="$tmp/bin:$PATH" \
  timeout 1800 bash "$tmp/readme-commands.sh" </dev/null
echo "== README commands: all ran"
cd - >/dev/null
if [ -d "$copy/dashboard/e2e/out" ]; then
  mkdir -p dashboard/e2e/out
  cp -r "$copy/dashboard/e2e/out/screenshots" "$copy/dashboard/e2e/out/large-run.json" dashboard/e2e/out/ 2>/dev/null || true
fi
