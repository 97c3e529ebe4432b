// Browser test of a takeover: `swarm serve` is killed (SIGKILL) while a
// model call is in flight, `swarm recover` takes the run over once the dead
// process's lease has run out, and the run's page shows it: a note on the
// first record the new process journaled, the model call asked again as
// attempt 2 whose duration leaves out the dead time, and in the Gantt view
// the lost attempt and the dead time drawn as a gap.
//
//   cd dashboard/e2e && npm ci && node --test takeover.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { serve, stop, swarmBin, launchChromium, checkA11y, request } from "./serve.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "out");
const shots = path.join(out, "screenshots");
const work = path.join(out, "work-takeover");
const T = 30_000;
const LEASE = ["--lease", "2s"];

let bin, server, base, browser;

before(async () => {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mkdirSync(shots, { recursive: true });
  writeFileSync(path.join(work, "swarm.yaml"), `version: 1
model: scripted:script.yaml
tools:
  book:
    description: Books an item and echoes the request
    command: ["cat"]
    input_schema: {type: object, properties: {item: {type: string}}, required: [item]}
    timeout: 10s
swarms:
  relay:
    description: Books a hut, then thinks for a few seconds
    instructions: Book for {{.Input}}.
    tools: [book]
`);
  writeFileSync(path.join(work, "script.yaml"), `relay:
  - tool_calls:
      - {name: book, arguments: {item: "hut"}}
    delay: 200ms
  - text: "the hut is booked"
    delay: 3s
`);
  bin = swarmBin(out);
  browser = await launchChromium(chromium);
});

after(async () => {
  await browser?.close();
  await stop(server);
});

const api = (method, p, body) => request(base, method, p, body, T);

test("a run taken over after its process was killed shows the takeover, the second attempt and the dead time", async () => {
  ({ proc: server, base } = await serve(bin, work, {}, T, LEASE));
  const { status, body } = await api("POST", "/v1/swarms/relay/runs", { input: "two people" });
  assert.equal(status, 201, JSON.stringify(body));
  const id = body.id;
  // The second model call is in flight once the first turn is journaled
  // (started, the model's tool call, the tool's call and result, the
  // turn's end).
  const deadline = Date.now() + T;
  while ((await api("GET", `/v1/runs/${id}`)).body.last_seq < 5) {
    if (Date.now() > deadline) throw new Error("the first turn did not end");
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 500));
  server.kill("SIGKILL");
  await new Promise((r) => server.on("exit", r));

  // swarm recover waits for the dead lease, takes the run over and asks
  // the model again.
  const rec = execFileSync(bin, [...LEASE, "recover"], { cwd: work, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: T });
  assert.match(rec, /"state":"completed"/);
  // swarm events shows the takeover on the first record the new process
  // journaled.
  const lines = execFileSync(bin, ["events", id], { cwd: work, encoding: "utf8" }).trim().split("\n").map((l) => JSON.parse(l));
  const taken = lines.filter((e) => e.takeover);
  assert.equal(taken.length, 1, "one takeover in swarm events");
  const [ev] = taken;
  assert.equal(ev.type, "model_response");
  assert.equal(ev.attempt, 2);
  assert.deepEqual(ev.takeover.redo, [ev.key]);
  assert.ok(ev.takeover.from && ev.takeover.node && ev.takeover.from !== ev.takeover.node, JSON.stringify(ev.takeover));
  const at = Date.parse(ev.takeover.at), seen = Date.parse(ev.takeover.last_seen);
  const before = lines[lines.indexOf(ev) - 1];
  assert.ok(seen >= Date.parse(before.time) && seen < at, "the dead process was last seen after its last record, before the takeover");

  ({ proc: server, base } = await serve(bin, work, {}, T, LEASE));
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  await page.goto(`${base}/ui/runs/${id}`);
  await page.locator("#run[data-loaded=true]").waitFor();
  const row = page.locator(`#timeline li.ev[data-seq="${ev.seq}"]`);
  await row.scrollIntoViewIfNeeded();
  assert.match(await row.locator(".takeover").textContent(), new RegExp(`Taken over by ${ev.takeover.node} from ${ev.takeover.from}.*no process drove the run for .*Asked again: ${ev.key}`));
  assert.equal(await row.locator(".badge.attempt").textContent(), "attempt 2");
  // The call's duration is the second attempt's: from the takeover to the
  // answer, not from the record before the crash.
  const ms = Number(await row.locator(".dur").getAttribute("data-ms"));
  assert.equal(ms, Date.parse(ev.time) - at, "the model call's duration starts at the takeover");
  await shot(page, "takeover-timeline", row);
  await checkA11y(page, "run page after a takeover");

  await page.getByRole("tab", { name: "Gantt" }).click();
  const gantt = page.locator("#gantt");
  await gantt.locator(".g-row.g-dead").waitFor();
  const attempts = await gantt.locator(".g-row.g-model[data-attempt]").evaluateAll((rows) => rows.map((r) => [r.dataset.attempt, r.classList.contains("g-lost")]));
  assert.deepEqual(attempts, [["1", true], ["2", false]], "the lost attempt and the second one");
  assert.equal(Number(await gantt.locator(".g-row.g-model[data-attempt='2'] .g-bar").getAttribute("data-ms")), ms);
  assert.equal(Number(await gantt.locator(".g-row.g-dead .g-bar").getAttribute("data-ms")), at - seen, "the gap is the dead time");
  assert.ok(await gantt.locator(".g-row .g-gap").count() >= 4, "the gap crosses every row");
  assert.match(await gantt.locator(".g-sum").textContent(), /no process drove the run/);
  await checkA11y(page, "Gantt after a takeover");
  await shot(page, "takeover-gantt");
  await ctx.close();
});

async function shot(page, name, el) {
  if (el) await el.screenshot({ path: path.join(shots, name + ".png") });
  else await page.screenshot({ path: path.join(shots, name + ".png"), fullPage: true });
}
