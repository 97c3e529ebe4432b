#!/usr/bin/env bash
# Runs the guide's commands as written: every ```sh block of README.md, then
# of the pages of docs/ in the order below, in a fresh copy of the
# repository; any command that fails fails CI. Each page runs in one shell
# of its own (so `cd` and background jobs carry over from block to block),
# starting at the repository's root; what one page installs (the swarm
# command, in the tutorial) the later pages use. (Fences without sh hold
# synopses, outputs and configuration, not commands.) What differs from a
# reader's shell:
#   - `go test` lines are skipped: .ci/run runs the tests itself;
#   - `go install` installs into a private GOBIN that is first on PATH;
#   - ports 8080 to 8089 become free ports, so CI never meets a server
#     already there;
#   - a line whose comment says "exits N" must exit with status N;
#   - a server a block started in the background (`swarm serve ... &`) and
#     did not stop is stopped after the block, so nothing waits on it.
# The Dashboard's page runs the browser tests; their screenshots and figures
# are copied back to dashboard/e2e/out. The tutorial's last step needs
# PostgreSQL on 127.0.0.1:5432 (started here if it is installed but down).
#
#   .ci/readme.sh                    every page
#   .ci/readme.sh docs/tutorial.md   only these pages (README.md's first block is
#                                    not run then: install swarm yourself)
set -euo pipefail
cd "$(dirname "$0")/.."

# The pages whose sh blocks run, in order. A page of docs/ with an sh block
# that is not listed here fails the check, so none is skipped unnoticed.
pages=(README.md docs/tutorial.md docs/swarm-command.md docs/evaluations.md docs/serving.md docs/teams.md docs/memory.md docs/deploying.md docs/dashboard.md docs/temporal.md)
for f in docs/*.md docs/*/*.md; do
  if grep -q '^```sh' "$f" && [[ " ${pages[*]} " != *" $f "* ]]; then
    echo "readme: $f has sh blocks but is not in .ci/readme.sh's list of pages"; exit 1
  fi
done
if [ $# -gt 0 ]; then pages=("$@"); fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy="$tmp/repo"
mkdir -p "$copy" "$tmp/bin"
git ls-files -z --cached --others --exclude-standard |
  tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$copy"

# Ten free ports in a row: 808N becomes $base+N.
free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=18080
until free $base && free $((base + 1)) && free $((base + 2)); do base=$((base + 10)); done

# script PAGE: the page's sh blocks as one shell script.
script() {
  echo 'set -euxo pipefail'
  echo 'trap '\''kill $(jobs -p) 2>/dev/null || true'\'' EXIT'
  awk -v page="$1" '
    /^```sh/ { inblock = 1; n++; print "# --- " page " block " n " (line " NR ")"; next }
    inblock && /^```/ { inblock = 0; print "for j in $(jobs -p); do kill \"$j\" 2>/dev/null || true; done"; next }
    inblock && /^go test/ { print "# skipped here, run by .ci/run: " $0; next }
    inblock { print }
  ' "$1" |
    sed -E 's/^(.*[^[:space:]])[[:space:]]+#.*exits ([0-9]+).*$/rc=0; \1 || rc=$?; [ "$rc" -eq \2 ] || { echo "readme: exit $rc, want \2" >\&2; exit 1; }/' |
    sed -E "s/\b808([0-9])\b/${base%0}\1/g"
}

all=""
for p in "${pages[@]}"; do script "$p" >"$tmp/$(echo "$p" | tr / -).sh"; all+=$(cat "$tmp/$(echo "$p" | tr / -).sh"); done
if [ $# -eq 0 ]; then
  if ! grep -q '^swarm ' <<<"$all"; then
    echo "readme: no swarm commands found in the pages' sh blocks"; exit 1
  fi
  if ! grep -q 'dashboard/e2e.*npm test' <<<"$all"; then
    echo "readme: the Dashboard's block (the browser tests) is missing from the pages"; exit 1
  fi
fi

# The tutorial's cluster runs on the local PostgreSQL.
pg_up() { (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; }
if ! pg_up && command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
  for v in $(ls /etc/postgresql); do pg_ctlcluster --skip-systemctl-redirect "$v" main start || true; done
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
fi

echo "== the guide's commands (ports 8080-8089 are ${base%0}0-${base%0}9 here)"
for p in "${pages[@]}"; do
  start=$SECONDS
  echo "== $p"
  (cd "$copy" && env -u SWARM_MODEL -u SWARM_STORE -u OPENAI_API_KEY -u ANTHROPIC_API_KEY \
    GOBIN="$tmp/bin" PATH="$tmp/bin:$PATH" \
    timeout 1800 bash "$tmp/$(echo "$p" | tr / -).sh" </dev/null) || { echo "readme: $p failed"; exit 1; }
  echo "== $p: all ran in $((SECONDS - start))s"
done
if [ -d "$copy/dashboard/e2e/out" ]; then
  mkdir -p dashboard/e2e/out
  cp -r "$copy/dashboard/e2e/out/screenshots" "$copy/dashboard/e2e/out/large-run.json" dashboard/e2e/out/ 2>/dev/null || true
fi
