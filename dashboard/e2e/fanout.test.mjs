// Browser test of a running fan-out on a workflow run's Nodes tab: a
// swarm.yaml graph whose draft fans out to three reviews (one slow, one
// behind a condition that does not hold) into a join, run by a real
// `swarm serve` and drawn in Debian's Chromium while the slow branch runs,
// then again, live, once the join has run. Screenshots go to
// out/screenshots.
//
//   cd dashboard/e2e && npm ci && node --test fanout.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { serve, stop, swarmBin, launchChromium, checkA11y } from "./serve.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "out");
const shots = path.join(out, "screenshots");
const work = path.join(out, "work-fanout");
const ADMIN = "admin-secret-0123456789";
const T = 30_000; // the bound of every wait

const swarmYAML = `version: 1
model: scripted:script.yaml
agents:
  writer: {instructions: Draft.}
  lawyer: {instructions: Check the law.}
  marketer: {instructions: Check the brand.}
  copyeditor: {instructions: Check the tone.}
  editor: {instructions: Merge the reviews.}
workflows:
  launch:
    nodes:
      draft: {agent: writer}
      legal: {agent: lawyer}
      brand: {agent: marketer}
      tone: {agent: copyeditor}
      merge: {agent: editor, join: all}
    edges:
      - {from: draft, to: legal}
      - {from: draft, to: tone}
      - {from: draft, to: brand, when: {field: brand, equals: true}}
      - {from: legal, to: merge}
      - {from: brand, to: merge}
      - {from: tone, to: merge}
`;
const scriptYAML = `writer:
  - text: '{"text": "the draft", "brand": false}'
lawyer:
  - text: lawful
copyeditor:
  - text: friendly
    delay: 6s
editor:
  - text: merged
`;

let server, base, browser;

before(async () => {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mkdirSync(shots, { recursive: true });
  writeFileSync(path.join(work, "swarm.yaml"), swarmYAML);
  writeFileSync(path.join(work, "script.yaml"), scriptYAML);
  ({ proc: server, base } = await serve(swarmBin(out), work, { SWARM_TOKENS: `admin:${ADMIN}:*` }, T));
  browser = await launchChromium(chromium);
});

after(async () => {
  if (browser) await browser.close();
  await stop(server);
});

async function api(method, p, body) {
  const res = await fetch(base + p, {
    method,
    headers: { Authorization: "Bearer " + ADMIN, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(T),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

test("a running fan-out: its fork and join drawn, each branch's state, updated live", async () => {
  const { status } = await api("POST", "/v1/swarms/launch/runs", { id: "launch-1", input: "a product" });
  assert.equal(status, 201);
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  await page.goto(base + "/ui/runs/launch-1");
  await page.getByLabel("Token").fill(ADMIN);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL(/\/ui\/runs\/launch-1/);
  await page.getByRole("tab", { name: "Nodes" }).click();
  const svg = page.locator("#panel-nodes svg#wf-graph");
  const box = (key) => svg.locator(`a.wf-box[data-node="launch/${key}"]`);
  // While the slow branch runs: the fast one done, the untaken one not
  // started, the join waiting for them.
  await box("tone").and(page.locator('[data-state="running"]')).waitFor();
  await box("legal").and(page.locator('[data-state="done"]')).waitFor();
  assert.equal(await box("brand").getAttribute("data-state"), "not started");
  assert.equal(await box("merge").getAttribute("data-state"), "not started");
  const edges = async (cls) =>
    svg.locator(`path.wf-edge.${cls}`).evaluateAll((ps) => ps.map((p) => `${p.dataset.from}>${p.dataset.to}`).sort());
  assert.deepEqual(await edges("wf-fork"), ["launch/draft>launch/brand", "launch/draft>launch/legal", "launch/draft>launch/tone"], "the fork's edges");
  assert.deepEqual(await edges("wf-join"), ["launch/brand>launch/merge", "launch/legal>launch/merge", "launch/tone>launch/merge"], "the edges into the join");
  assert.equal(await svg.locator("g.wf-pill-join", { hasText: "join: all" }).count(), 1);
  await checkA11y(page, "running fan-out");
  // The page, loaded again, gives the run's progress in nodes.
  await page.reload();
  assert.match(await page.locator("#progress").textContent(), /^2\/5 nodes$/, "the run's progress in nodes");
  await page.getByRole("tab", { name: "Nodes" }).click();
  await page.screenshot({ path: path.join(shots, "workflow-fanout-running.png"), fullPage: true });

  // Live: the slow branch answers, the join runs, the untaken branch is
  // skipped.
  await box("merge").and(page.locator('[data-state="done"]')).waitFor();
  assert.equal(await box("tone").getAttribute("data-state"), "done");
  await box("brand").and(page.locator('[data-state="skipped"]')).waitFor();
  await page.screenshot({ path: path.join(shots, "workflow-fanout-done.png"), fullPage: true });
  await ctx.close();
});
