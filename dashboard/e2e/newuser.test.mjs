// Browser tests of what a new user tripped on in the dashboard: the runs
// list's columns and filters, pages opened on a tab or a finished run, a
// conversation's header and rows, a team's member ids, a call in flight,
// the request inspector's parts and estimate, and a fork's durations.
// Screenshots go to out/screenshots.
//
//   cd dashboard/e2e && npm ci && node --test newuser.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, cpSync, rmSync, readFileSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { serve, stop, swarmBin, launchChromium, checkA11y, request } from "./serve.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "out");
const shots = path.join(out, "screenshots");
const work = path.join(out, "work-newuser");
const T = 30_000;

let server, base, browser;

before(async () => {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mkdirSync(shots, { recursive: true });
  cpSync(path.join(here, "testdata"), work, { recursive: true });
  ({ proc: server, base } = await serve(swarmBin(out), work, {}, T));
  browser = await launchChromium(chromium);
});

after(async () => {
  await browser?.close();
  await stop(server);
});

const api = (method, p, body) => request(base, method, p, body, T);

// events reads the journal of a run that is paused or finished (the
// stream of a running one does not end).
async function events(id) {
  const res = await fetch(`${base}/v1/runs/${id}/events`, { signal: AbortSignal.timeout(T) });
  return (await res.text()).split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
}

async function waitState(id, want) {
  const deadline = Date.now() + T;
  for (;;) {
    const { body } = await api("GET", `/v1/runs/${encodeURIComponent(id)}`);
    if (body && body.state === want) return body;
    if (Date.now() > deadline) throw new Error(`run ${id} is ${body && body.state}, want ${want}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function newPage(height = 900) {
  const ctx = await browser.newContext({ viewport: { width: 1400, height } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  return page;
}

const shot = (page, name) => page.screenshot({ path: path.join(shots, name + ".png"), fullPage: true });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("the runs list: start time, duration, input and fork mark; filters whose placeholders fit", async () => {
  assert.equal((await api("POST", "/v1/swarms/trip/runs", { id: "list-1", input: "two people and a dog" })).status, 201);
  await waitState("list-1", "completed");
  assert.equal((await api("POST", "/v1/runs/list-1/fork", { id: "list-1-fork", at: "t3/model" })).status, 201);
  await waitState("list-1-fork", "completed");
  const page = await newPage();
  await page.goto(base + "/ui/");
  const row = page.locator("#rows tr", { has: page.locator('a[title="list-1"]') });
  assert.equal(await row.locator(".sub.input").textContent(), "two people and a dog");
  assert.match(await row.locator("td.started time").first().textContent(), /^[A-Z][a-z]{2} \d+ \d\d:\d\d:\d\d$/);
  assert.match(await row.locator("td.took").textContent(), /\d+(\.\d+)? (ms|s)$/);
  const fork = page.locator("#rows tr", { has: page.locator('a[title="list-1-fork"]') });
  assert.equal(await fork.locator(".fork-badge").textContent(), "fork");
  assert.match(await fork.locator(".sub", { hasText: "fork of" }).textContent(), /fork of list-1/);
  // Each text filter's placeholder fits its box.
  for (const sel of ["#f-q", "#f-text"]) {
    const [text, room] = await page.locator(sel).evaluate((input) => {
      const cs = getComputedStyle(input);
      const ctx = document.createElement("canvas").getContext("2d");
      ctx.font = cs.font;
      return [ctx.measureText(input.placeholder).width, input.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)];
    });
    assert.ok(text <= room, `${sel}'s placeholder needs ${text}px, has ${room}px`);
  }
  await checkA11y(page, "runs list");
  await shot(page, "newuser-runs");
  await page.context().close();
});

test("a finished run opens at its top, and so do its #gantt and #transcript addresses", async () => {
  await waitState("list-1", "completed");
  const page = await newPage(600);
  await page.goto(base + "/ui/runs/list-1");
  await page.locator("#run[data-loaded=true]").waitFor();
  await sleep(300);
  assert.equal(await page.locator("#follow").isChecked(), false, "nothing to follow in a finished run");
  assert.equal(await page.evaluate(() => window.scrollY), 0, "a finished run's page is not scrolled to its end");
  await page.context().close();
  for (const tab of ["gantt", "transcript"]) {
    const page = await newPage(600);
    await page.goto(base + "/ui/runs/list-1#" + tab);
    await page.locator("#run[data-loaded=true]").waitFor();
    await page.locator(`#tab-${tab}[aria-selected=true]`).waitFor();
    if (tab === "gantt") await page.locator("#gantt .g-bar").first().waitFor();
    await sleep(300);
    assert.equal(await page.evaluate(() => window.scrollY), 0, `#${tab} opens the tab, not scrolled past the header`);
    assert.ok(await page.locator("h1").isVisible());
    await page.screenshot({ path: path.join(shots, `newuser-hash-${tab}.png`) });
    await page.context().close();
  }
});

test("a conversation counts its messages, says it had no input, and shows the user's messages as the user's", async () => {
  assert.equal((await api("POST", "/v1/swarms/desk/runs", { id: "desk-n" })).status, 201);
  await waitState("desk-n", "paused");
  for (const message of ["hi", "book a hut"]) {
    assert.equal((await api("POST", "/v1/runs/desk-n/resume", { message })).status, 202);
    await sleep(100);
    await waitState("desk-n", "paused");
  }
  const page = await newPage();
  await page.goto(base + "/ui/runs/desk-n");
  await page.locator("#run[data-caught-up=true]").waitFor();
  await page.locator("#timeline li.ev-resumed").nth(1).waitFor();
  assert.equal(await page.locator("#turn-label").textContent(), "messages");
  assert.equal(await page.locator("#turn").textContent(), "2");
  assert.match(await page.locator("#timeline li.ev-started .sum").textContent(), /^no input/);
  assert.equal(await page.locator("#input").textContent(), "none", "the input is none, not null");
  assert.deepEqual(await page.locator("#timeline li.ev-resumed .sum").allTextContents(), ["user: hi", "user: book a hut"]);
  await shot(page, "newuser-conversation");
  await page.context().close();
  await api("POST", "/v1/runs/desk-n/stop", { reason: "done" });
});

test("a team's roster shows the end of its members' run ids", async () => {
  const { status, body } = await api("POST", "/v1/swarms/crew/runs", {});
  assert.equal(status, 201);
  const id = body.id;
  await waitState(id, "paused");
  assert.equal((await api("POST", `/v1/runs/${id}/resume`, { message: "go" })).status, 202);
  const page = await newPage();
  await page.goto(base + "/ui/teams/" + encodeURIComponent(id));
  const alice = page.locator('#team-live tr[data-member="alice"]');
  await alice.waitFor();
  const shown = await alice.locator(`a[href="/ui/runs/${encodeURIComponent(id + "~alice")}"]`).textContent();
  assert.ok(id.length + 6 > 24, "the id is long enough to be shortened");
  assert.match(shown, /…/);
  assert.match(shown, /~alice$/, "the part that differs is shown: " + shown);
  await shot(page, "newuser-team");
  await page.context().close();
});

test("a model call in flight says so and counts, and the run's age counts on", async () => {
  assert.equal((await api("POST", "/v1/swarms/slow/runs", { id: "slow-1", input: "life" })).status, 201);
  const page = await newPage();
  await page.goto(base + "/ui/runs/slow-1");
  const inflight = page.locator("#inflight:not([hidden])");
  await inflight.waitFor();
  const first = await inflight.textContent();
  assert.match(first, /^waiting on the model \(slow\), \d/);
  const age = await page.locator(".meta time.ago").textContent();
  await page.waitForFunction(([text, ageText]) => document.querySelector("#inflight").textContent !== text && document.querySelector(".meta time.ago").textContent !== ageText, [first, age], { timeout: T });
  await checkA11y(page, "run in flight");
  await shot(page, "newuser-inflight");
  await api("POST", "/v1/runs/slow-1/stop", { reason: "enough" });
  await page.locator("#inflight[hidden]").waitFor({ state: "attached" });
  await page.context().close();
});

test("the request inspector shows the images sent and says how it estimates tokens", async () => {
  const dot = readFileSync(path.join(here, "testdata-parts", "dot.png")).toString("base64");
  assert.equal((await api("POST", "/v1/swarms/trip/runs", { id: "look-2", input: "two people", parts: [{ type: "image", media_type: "image/png", name: "dot.png", data: dot }] })).status, 201);
  await waitState("look-2", "completed");
  const page = await newPage();
  await page.goto(base + "/ui/runs/look-2");
  await page.locator("#run[data-loaded=true]").waitFor();
  await page.getByRole("button", { name: "Inspect request: step t1/model" }).click();
  const box = page.locator(".inspect-box");
  await box.locator(".inspect-total").waitFor();
  await box.locator(".inspect-messages .inspect-parts img").first().waitFor();
  assert.match(await box.locator(".inspect-parts").first().textContent(), /dot\.png/);
  assert.match(await box.locator(".inspect-how").textContent(), /an image counts as its width × height \/ 750 tokens/);
  await checkA11y(page, "request inspector with an image");
  await shot(page, "newuser-inspector");
  await page.context().close();
});

test("a fork's handoff begun in its origin counts from the fork's start", async () => {
  assert.equal((await api("POST", "/v1/swarms/trip/runs", { id: "fk-origin", input: "two people" })).status, 201);
  await waitState("fk-origin", "completed");
  await sleep(1500); // the fork starts well after its origin's handoff
  const at = "t1/h/call_trip_0_0/t1/model";
  assert.equal((await api("POST", "/v1/runs/fk-origin/fork", { id: "fk-1", at })).status, 201);
  await waitState("fk-1", "completed");
  const fork = await events("fk-1");
  const ret = fork.find((e) => e.type === "handoff_returned" && e.target === "weather");
  assert.ok(ret.seq > fork[0].reused + 1, "the handoff returned in the fork");
  const page = await newPage();
  await page.goto(base + "/ui/runs/fk-1");
  await page.locator("#run[data-loaded=true]").waitFor();
  const ms = Number(await page.locator(`#timeline li.ev[data-seq="${ret.seq}"] .dur`).getAttribute("data-ms"));
  assert.equal(ms, Date.parse(ret.time) - Date.parse(fork[0].time), "from the fork's start, not from the origin's handoff");
  await page.context().close();
});
