// Browser test of a workflow's drawing on its run's Nodes tab: a workflow
// of every shape (./shapes serves it), drawn from its shape in Chromium.
//
//   cd dashboard/e2e && npm ci && node --test workflow.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { stop, launchChromium, checkA11y } from "./serve.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "out");
const shots = path.join(out, "screenshots");
const T = 30_000;

let server, base, runID, browser;

before(async () => {
  mkdirSync(shots, { recursive: true });
  const bin = path.join(out, "shapes");
  execFileSync("go", ["build", "-o", bin, "./dashboard/e2e/shapes"], { cwd: path.join(here, "..", ".."), stdio: "inherit" });
  server = spawn(bin, [], { stdio: ["ignore", "ignore", "pipe"] });
  [runID, base] = await new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error("shapes did not start: " + buf)), T);
    server.stderr.on("data", (d) => {
      buf += d;
      const m = buf.match(/run (\S+)\nlistening on (http:\/\/[0-9.:]+)/);
      if (m) {
        clearTimeout(timer);
        resolve([m[1], m[2]]);
      }
    });
    server.on("exit", (code) => reject(new Error("shapes exited " + code + ": " + buf)));
  });
  browser = await launchChromium(chromium);
});

after(async () => {
  await browser?.close();
  await stop(server);
});

test("a workflow's drawing: sequence, fork and join, for-each, route, loop, graph, states and child runs; the runs list by kind", async () => {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  await page.goto(`${base}/ui/runs/${runID}`);
  await page.getByRole("tab", { name: "Nodes" }).click();
  const svg = page.locator("#panel-nodes svg#wf-graph");
  await svg.waitFor();
  await page.screenshot({ path: path.join(shots, "workflow-shapes-page.png"), fullPage: true });

  // Each step that holds others is a frame, the bounds on the loop's and
  // the graph's.
  const frame = (key) => svg.locator(`g.wf-frame[data-frame="${key}"]`);
  for (const key of ["review", "review/tone-check", "translate", "channel", "polish", "publish"]) {
    assert.equal(await frame(key).count(), 1, `a frame for ${key}`);
  }
  assert.equal(await frame("polish").getAttribute("data-bound"), "3");
  assert.equal(await frame("publish").getAttribute("data-bound"), "10");
  assert.equal(await frame("publish").getAttribute("data-state"), "waiting");
  assert.equal(await frame("review").getAttribute("data-state"), "done", "a quorum join is done once its winners are");
  assert.equal(await frame("channel").getAttribute("data-state"), "done", "a route is done once its route is");

  const edges = async (cls) =>
    svg.locator(`path.wf-edge.${cls}`).evaluateAll((ps) => ps.map((p) => `${p.dataset.from}>${p.dataset.to}`));
  const labels = await svg.locator("text.wf-label").allTextContents();
  // The sequence: plan, then the parallel step.
  assert.ok((await edges("wf-seq")).includes("plan>review"), "plan's edge to the review");
  // The parallel step fans out to its three branches and in to its join.
  assert.deepEqual((await edges("wf-fork")).filter((e) => e.startsWith("review>")).sort(), ["review>review/brand", "review>review/legal", "review>review/tone-check"]);
  assert.deepEqual((await edges("wf-join")).filter((e) => e.endsWith(">review")).sort(), ["review/brand>review", "review/legal>review", "review/tone-check>review"]);
  assert.equal(await svg.locator("g.wf-pill-join", { hasText: "join: quorum 2" }).count(), 1);
  assert.equal(await svg.locator("g.wf-pill", { hasText: "for each element" }).count(), 1);
  // The route's alternatives, dashed from the router's pick.
  assert.deepEqual((await edges("wf-alt")).filter((e) => e.startsWith("channel>")).sort(), ["channel>channel/blog", "channel>channel/social"]);
  assert.equal(await svg.locator("g.wf-pill", { hasText: "pick: router router" }).count(), 1);
  // The loop's back edge, with its bound and its evaluator.
  assert.deepEqual(await edges("wf-back"), ["polish>polish"]);
  assert.ok(labels.includes("next round, ≤ 3 · until judge says done"), "the loop's back edge says its bound: " + labels);
  // The graph: forward edges with their conditions, the cycle back up.
  assert.deepEqual((await edges("wf-flow")).sort(), ["publish/approve>publish/fix", "publish/approve>publish/post"]);
  assert.deepEqual(await edges("wf-cycle"), ["publish/fix>publish/approve"]);
  for (const l of ["approved", "otherwise"]) assert.ok(labels.includes(l), `the label ${l}: ${labels}`);

  // Each node's state: done before, waiting for a human (its second
  // visit) at approve, not started after.
  const box = (key) => svg.locator(`a.wf-box[data-node="${key}"]`);
  assert.equal(await box("plan").getAttribute("data-state"), "done");
  assert.equal(await box("polish/editor").getAttribute("data-state"), "done");
  assert.equal(await box("channel/social").getAttribute("data-state"), "not started");
  assert.equal(await box("publish/approve").getAttribute("data-state"), "waiting");
  assert.equal(await box("publish/approve").locator("text.wf-sub").textContent(), "human · waiting for a human ×2");
  assert.equal(await box("publish/post").getAttribute("data-state"), "not started");
  assert.equal(await box("publish/approve").locator("rect.wf-s-waiting").count(), 1);

  // No two boxes overlap, and every box and frame lies inside the drawing.
  const rects = await svg.locator("a.wf-box > rect, g.wf-frame > rect").evaluateAll((rs) =>
    rs.map((r) => ({ key: r.parentElement.dataset.node || r.parentElement.dataset.frame, box: r.parentElement.matches("a.wf-box"), x: r.x.baseVal.value, y: r.y.baseVal.value, width: r.width.baseVal.value, height: r.height.baseVal.value })),
  );
  const vb = await svg.evaluate((s) => ({ width: s.viewBox.baseVal.width, height: s.viewBox.baseVal.height }));
  for (const r of rects) {
    assert.ok(r.x >= 0 && r.y >= 0 && r.x + r.width <= vb.width && r.y + r.height <= vb.height, `${r.key} inside the drawing: ${JSON.stringify(r)} in ${vb.width}x${vb.height}`);
  }
  const boxes = rects.filter((r) => r.box);
  assert.equal(boxes.length, 15, "a box per node: " + boxes.map((b) => b.key));
  for (const a of boxes) {
    for (const b of boxes) {
      if (a === b) continue;
      const apart = a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
      assert.ok(apart, `${a.key} and ${b.key} overlap`);
    }
  }
  await checkA11y(page, "workflow drawing");
  await svg.screenshot({ path: path.join(shots, "workflow-shapes.png") });

  // A node links to its events, a swarm node to its child run.
  const child = svg.locator('a.wf-child-run[data-child]');
  assert.equal(await child.count(), 1, "the blog node's child run");
  const childID = await child.getAttribute("data-child");
  await child.click();
  await page.waitForURL(`${base}/ui/runs/${childID}`);
  await page.goBack();
  await page.getByRole("tab", { name: "Nodes" }).click();
  await box("plan").click();
  await page.waitForURL(/find=key%3Aplan/);

  // The runs list marks the workflow's run, and keeps one kind of run.
  await page.goto(`${base}/ui/?scope=all`);
  const swarmCell = (id) => page.locator(`#rows tr:has(a[href="/ui/runs/${id}"]) td.swarm`);
  assert.equal(await swarmCell(runID).locator(".kind-badge").textContent(), "workflow");
  assert.equal(await swarmCell(childID).locator(".kind-badge").count(), 0, "the blog swarm's run is no workflow's");
  await page.getByLabel("Kind").selectOption("workflow");
  await page.getByRole("button", { name: "Apply" }).click();
  await page.waitForURL(/kind=workflow/);
  assert.deepEqual(await page.locator("#rows td.swarm").evaluateAll((tds) => tds.map((td) => td.dataset.kind)), ["workflow"]);
  await checkA11y(page, "runs list by kind");
  await page.screenshot({ path: path.join(shots, "runs-kind.png") });
  await ctx.close();
});
