// Browser test of the dashboard's evals pages: the support desk's eval set
// (examples/evals, scripted models) runs through `swarm eval run` against
// its two configurations; then a real `swarm serve` on that directory shows
// the eval runs in Debian's Chromium: the list, an eval run's cases with
// their scores and links to their runs, the two side by side with their
// outputs and trajectories diffed, and an eval run that a third command is
// running, which the page follows live until its report is in. Screenshots
// go to out/screenshots.
//
//   cd dashboard/e2e && npm ci && node --test evals.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, cpSync, rmSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { serve, stop, swarmBin, launchChromium, checkA11y } from "./serve.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "out");
const shots = path.join(out, "screenshots");
const work = path.join(out, "work-evals");
const example = path.join(here, "..", "..", "examples", "evals");
const T = 30_000; // the bound of every wait

let server, base, browser, bin, slow;

before(async () => {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mkdirSync(shots, { recursive: true });
  // The example's committed files only: a store its directory holds from
  // commands run there before (the docs' blocks run in the same copy) is not
  // this test's.
  cpSync(example, work, { recursive: true, filter: (src) => path.basename(src) !== ".swarm" });
  // A third configuration whose clerk takes its time, for the live page.
  writeFileSync(path.join(work, "script-slow.yaml"), readFileSync(path.join(work, "script.yaml"), "utf8").replace(/^(  - (?:tool_calls|text): .*)$/gm, "$1\n    delay: 700ms"));
  writeFileSync(path.join(work, "swarm-slow.yaml"), readFileSync(path.join(work, "swarm.yaml"), "utf8").replace("scripted:script.yaml", "scripted:script-slow.yaml"));
  bin = swarmBin(out);
  const r = spawnSync(bin, ["eval", "run", "-q", "support.eval.yaml", "--config", "swarm.yaml", "--config", "swarm-v2.yaml"], { cwd: work, timeout: 4 * T, encoding: "utf8" });
  assert.ok(r.status === 0 || r.status === 1, `swarm eval run: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
  ({ proc: server, base } = await serve(bin, work, {}, T));
  browser = await launchChromium(chromium);
});

after(async () => {
  if (slow && slow.exitCode === null) slow.kill("SIGKILL");
  if (browser) await browser.close();
  await stop(server);
});

async function api(p) {
  const res = await fetch(base + p, { signal: AbortSignal.timeout(T) });
  return { status: res.status, body: await res.json() };
}

async function open(p) {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  await page.goto(base + p);
  return page;
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(shots, name + ".png"), fullPage: true });
}

test("list eval runs, open one, follow a case to its run, compare two side by side", async () => {
  const { body } = await api("/v1/evals");
  const byConfig = Object.fromEntries(body.evals.map((e) => [e.config, e]));
  assert.ok(byConfig["swarm.yaml"] && byConfig["swarm-v2.yaml"], "an eval run per configuration: " + JSON.stringify(body));

  const page = await open("/ui/evals");
  assert.equal(await page.locator("nav.side a[aria-current=page]").textContent(), "Evals");
  const rows = page.locator("table.evals tbody tr");
  assert.equal(await rows.count(), 2);
  const v1 = page.locator(`tr[data-eval="${byConfig["swarm.yaml"].id}"]`);
  assert.match(await v1.textContent(), /support/);
  assert.match(await v1.textContent(), /100%/);
  assert.match(await v1.textContent(), /4\/4/);
  await checkA11y(page, "evals");
  await shot(page, "evals");

  // An eval run: its cases, each with scores and a link to its run.
  await v1.getByRole("link").click();
  await page.waitForURL(base + "/ui/evals/" + byConfig["swarm.yaml"].id);
  const cases = page.locator("table.eval-cases tr.case");
  assert.deepEqual(await cases.evaluateAll((rs) => rs.map((r) => r.dataset.case)),
    ["refund-trajectory", "refund-answer", "refund-tone", "refund-conversation"], "the set's cases in order");
  const tone = page.locator('tr.case[data-case="refund-tone"]');
  assert.match(await tone.locator(".verdict").textContent(), /pass/);
  assert.match(await tone.textContent(), /Refunded one of the two 59 EUR payments|refunded one of the two 59 EUR payments/);
  await checkA11y(page, "eval run");
  await shot(page, "eval-run");
  await tone.locator("td.id a").click();
  await page.waitForURL(/\/ui\/runs\/eval-.*\.case\.refund-tone$/);
  assert.match(await page.locator("main").textContent(), /clerk/);

  // Side by side: v1 against v2, their trajectories diffed.
  await page.goto(base + "/ui/evals");
  await page.getByLabel("Base").selectOption(byConfig["swarm.yaml"].id);
  await page.getByLabel("Other").selectOption(byConfig["swarm-v2.yaml"].id);
  await page.getByRole("button", { name: "Compare side by side" }).click();
  await page.waitForURL(/\/ui\/evals\/compare\?/);
  const pair = page.locator('section.case-pair[data-case="refund-trajectory"]');
  assert.match(await pair.locator("pre.traj-diff .d-del").first().textContent(), /- clerk → lookup_order\(\{"order":"1234"\}\)/, "v2 dropped the lookup");
  assert.match(await pair.locator("pre.out-diff .d-add").first().textContent(), /\+ Done, refund issued for order 1234\./);
  assert.equal(await page.locator("section.case-pair").count(), 4);
  assert.match(await page.locator("#verdict").textContent(), /0 fixed, 4 broken, McNemar p=0\.125/);
  assert.equal(await page.locator("section.case-pair h2 .v-fail").count(), 4, "every case broken");
  await checkA11y(page, "eval comparison");
  await shot(page, "eval-compare");
  await page.context().close();
});

test("an eval run's page follows it live while a command runs it", async () => {
  slow = spawn(bin, ["--lease", "5s", "eval", "run", "-q", "--parallel", "1", "support.eval.yaml", "--config", "swarm-slow.yaml"], { cwd: work, stdio: "ignore" });
  let id = "";
  for (const deadline = Date.now() + T; !id && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    const e = (await api("/v1/evals")).body.evals.find((e) => e.config === "swarm-slow.yaml");
    if (e) id = e.id;
  }
  assert.ok(id, "the slow eval run appears");
  const page = await open("/ui/evals/" + id);
  await page.locator("#eval-live .live-note").waitFor();
  // Cases appear as they finish, then the report replaces the list.
  await page.locator('#eval-live tr.case[data-case="refund-trajectory"]').waitFor();
  await shot(page, "eval-live");
  assert.match(await page.locator("#cases-done").textContent(), /^[1-3]\/4$/);
  await page.locator("#eval-live table.eval-cases tr.case >> nth=3").waitFor({ timeout: 3 * T });
  await page.locator("#eval-live .state-completed").waitFor({ timeout: 3 * T });
  assert.equal(await page.locator("#cases-done").textContent(), "4/4");
  assert.equal(await page.locator("#eval-live td.id a").count(), 4, "each case links to its run once the report is in");
  await shot(page, "eval-live-done");
  await page.context().close();
});
