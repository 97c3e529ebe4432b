// Starting and stopping `swarm serve` for the browser tests.
import { spawn, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import assert from "node:assert/strict";
import path from "node:path";

const require = createRequire(import.meta.url);

const here = path.dirname(new URL(import.meta.url).pathname);

// swarmBin returns the swarm command to test: SWARM_BIN, or one built
// into dir with go build.
export function swarmBin(dir) {
  if (process.env.SWARM_BIN) return process.env.SWARM_BIN;
  const bin = path.join(dir, "swarm");
  execFileSync("go", ["build", "-o", bin, "./cmd/swarm"], { cwd: path.join(here, "..", ".."), stdio: "inherit" });
  return bin;
}

// serve starts `swarm serve` on a free loopback port in directory cwd and
// returns the process and the server's base URL once it listens; flags go
// before the command (--lease 2s, say).
export async function serve(bin, cwd, env = {}, timeout = 30_000, flags = []) {
  const proc = spawn(bin, [...flags, "serve", "--addr", "127.0.0.1:0"], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const base = await new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error("swarm serve did not start: " + buf)), timeout);
    proc.stderr.on("data", (d) => {
      buf += d;
      const m = buf.match(/listening on (http:\/\/[0-9.:]+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on("exit", (code) => reject(new Error("swarm serve exited " + code + ": " + buf)));
  });
  return { proc, base };
}

// stop ends a server started by serve (SIGTERM, then SIGKILL after 10 s).
export async function stop(proc) {
  if (!proc || proc.exitCode !== null) return;
  proc.kill("SIGTERM");
  await new Promise((r) => {
    const t = setTimeout(() => { proc.kill("SIGKILL"); r(); }, 10_000);
    proc.on("exit", () => { clearTimeout(t); r(); });
  });
}

// request sends method p to the server at base with a JSON body (none if
// undefined) and no token, and returns the status and the decoded body.
export async function request(base, method, p, body, timeout = 30_000) {
  const res = await fetch(base + p, { method, headers: { "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeout) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

// launchChromium starts Debian's Chromium (or CHROMIUM) headless.
export async function launchChromium(chromium) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu"],
  });
}

// checkA11y fails if axe-core, from npm, finds violations of the WCAG 2 A
// and AA rules (labels, contrast, landmarks, names of controls) on page.
export async function checkA11y(page, name) {
  // Evaluated through the DevTools protocol: the page's CSP forbids
  // inline scripts, as it should.
  await page.evaluate(readFileSync(require.resolve("axe-core/axe.min.js"), "utf8"));
  const result = await page.evaluate(async () => await window.axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } }));
  const bad = result.violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
  assert.deepEqual(bad, [], `accessibility violations on ${name}`);
}
