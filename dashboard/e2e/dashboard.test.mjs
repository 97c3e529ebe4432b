// Browser tests of the dashboard: a real `swarm serve` on loopback (with
// two bearer tokens) and Debian's Chromium driven by playwright-core.
// Screenshots of each page go to out/screenshots (a CI artifact).
//
//   cd dashboard/e2e && npm ci && npm test
//
// SWARM_BIN names a built swarm command (default: built here with go
// build); CHROMIUM the browser (default /usr/bin/chromium).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, cpSync, rmSync, existsSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { serve, stop, swarmBin, launchChromium, checkA11y } from "./serve.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "out");
const shots = path.join(out, "screenshots");
const work = path.join(out, "work");
const ADMIN = "admin-secret-0123456789";
const LIMITED = "approval-only-secret-0123";
const T = 30_000; // the bound of every wait

let server, base, browser;

async function startServer() {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mkdirSync(shots, { recursive: true });
  cpSync(path.join(here, "testdata"), work, { recursive: true });
  ({ proc: server, base } = await serve(swarmBin(out), work, { SWARM_TOKENS: `admin:${ADMIN}:*;ops:${LIMITED}:approval` }, T));
}

async function api(method, p, body, token = ADMIN) {
  const res = await fetch(base + p, {
    method,
    headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(T),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function events(id) {
  const res = await fetch(`${base}/v1/runs/${id}/events`, { headers: { Authorization: "Bearer " + ADMIN }, signal: AbortSignal.timeout(T) });
  const text = await res.text();
  return text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
}

async function waitState(id, want) {
  const deadline = Date.now() + T;
  for (;;) {
    const { body } = await api("GET", `/v1/runs/${id}`);
    if (body.state === want) return body;
    if (Date.now() > deadline) throw new Error(`run ${id} is ${body.state}, want ${want}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function login(token = ADMIN) {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  await page.goto(base + "/ui/");
  assert.match(page.url(), /\/ui\/login/, "an unauthenticated browser is sent to the login page");
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL(base + "/ui/");
  return page;
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(shots, name + ".png"), fullPage: true });
}

before(async () => {
  await startServer();
  browser = await launchChromium(chromium);
});

after(async () => {
  if (browser) await browser.close();
  await stop(server);
});

test("start a run from the swarms page and watch its events appear live", async () => {
  const page = await login();
  await shot(page, "runs-empty");
  await page.getByRole("link", { name: "Swarms & agents" }).click();
  await checkA11y(page, "swarms");
  await shot(page, "swarms");
  await page.locator("#in-trip").fill("two people");
  await page.locator("form[action='/ui/swarms/trip/runs'] button").click();
  await page.waitForURL(/\/ui\/runs\/run_/);
  const id = decodeURIComponent(page.url().split("/ui/runs/")[1]);
  // Events arrive while the run is running: the count grows before the
  // run completes (each scripted step takes 600 ms).
  await page.locator("#timeline li.ev-model_response").first().waitFor();
  const { body: mid } = await api("GET", `/v1/runs/${id}`);
  assert.equal(mid.state, "running", "the first model response is shown while the run still runs");
  await shot(page, "run-live");
  await page.locator("#state .state-completed").waitFor();
  await page.locator("#run[data-loaded=true]").waitFor();
  const journal = await events(id);
  assert.equal(await page.locator("#timeline li.ev").count(), journal.length, "every journal event is on the timeline");
  // Every event names its agent; parallel calls sit side by side.
  const agents = await page.locator("#timeline li.ev .agent").allTextContents();
  assert.ok(agents.includes("weather") && agents.includes("trip"), "events carry their agents: " + agents.join(","));
  assert.equal(await page.locator("li.ev-model_response").first().locator(".lanes .call").count(), 3);
  assert.equal(await page.locator(".lanes .call.pending").count(), 0, "every tool call has its result");
  // Step keys and raw JSON on demand.
  await page.getByLabel("step keys").check();
  assert.equal(await page.locator("#timeline li.ev").nth(1).locator(".key").textContent(), "t1/model");
  await page.locator("#timeline li.ev").nth(1).getByRole("button", { name: /JSON of event/ }).click();
  assert.match(await page.locator("#timeline li.ev").nth(1).locator("pre.raw").textContent(), /"key": "t1\/model"/);
  // Usage per agent and for the tree.
  // (the side panel refreshes half a second after the run's end)
  await page.locator("#usage tfoot", { hasText: /Tree\s*6/ }).waitFor();
  await checkA11y(page, "run page");
  await shot(page, "run-completed");
  await page.getByRole("tab", { name: "Transcript" }).click();
  await page.locator("#transcript .msg").first().waitFor();
  await shot(page, "run-transcript");
  // The list shows the run with its tree's tokens.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Runs" }).click();
  await page.locator(`#rows a[title="${id}"]`).waitFor();
  await checkA11y(page, "runs list");
  await shot(page, "runs");
  await page.context().close();
});

test("open a child run from the tree and come back", async () => {
  const { body } = await api("POST", "/v1/swarms/trip/runs", { id: "trip-child", input: "a family" });
  assert.equal(body.id, "trip-child");
  await waitState("trip-child", "completed");
  const page = await login();
  await page.goto(base + "/ui/runs/trip-child");
  await page.locator(".tree li li").first().waitFor();
  await page.locator(".tree").getByRole("link", { name: "guide" }).click();
  await page.waitForURL(/\/ui\/runs\/trip-child\./);
  await page.locator("#run[data-loaded=true]").waitFor();
  assert.equal(await page.locator("h1 .dim").textContent(), "guide");
  await shot(page, "run-child");
  await page.getByRole("link", { name: "parent run" }).click();
  await page.waitForURL(base + "/ui/runs/trip-child");
  await page.locator("#run[data-loaded=true]").waitFor();
  // The timeline links to the child too.
  assert.ok(await page.locator("#timeline a.child-link").count() >= 1);
  await page.context().close();
});

test("resume a paused run from the form", async () => {
  await api("POST", "/v1/swarms/approval/runs", { id: "hut-1", input: "a hut" });
  await waitState("hut-1", "paused");
  const page = await login();
  await page.goto(base + "/ui/runs/hut-1");
  await page.locator("#pause:not([hidden])").waitFor();
  assert.equal(await page.locator("#pause-reason").textContent(), "approve booking the hut?");
  const pauseCard = page.locator(".lanes .call", { hasText: "pause" });
  await pauseCard.locator(".out", { hasText: "waiting for an answer…" }).waitFor();
  await checkA11y(page, "paused run");
  await shot(page, "run-paused");
  await page.getByLabel("Your answer").fill("approved");
  await page.getByRole("button", { name: "Resume" }).click();
  await page.locator("#state .state-completed").waitFor();
  assert.ok(await page.locator("#pause").isHidden());
  // The pause card shows the answer, once the run ended as before.
  await page.locator("#run[data-loaded=true]").waitFor();
  assert.equal(await page.locator(".lanes .call.pending").count(), 0, "no card waits for a result after the run ended");
  assert.match(await pauseCard.locator(".out").textContent(), /answer\s*approved/);
  await page.reload();
  await page.locator("#run[data-loaded=true]").waitFor();
  assert.equal(await page.locator(".lanes .call.pending").count(), 0, "nor after a reload");
  assert.match(await pauseCard.locator(".out").textContent(), /answer\s*approved/);
  const evs = await events("hut-1");
  assert.ok(evs.some((e) => e.type === "resumed" && e.message === "approved"), "the answer is journaled");
  await page.context().close();
});

// waitEvent follows run id's event stream until an event with key comes,
// or one the function key accepts (the stream of a paused run stays open).
async function waitEvent(id, key) {
  const match = typeof key === "function" ? key : (e) => e.key === key;
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new Error(`run ${id} has no event ${key}`)), T);
  try {
    const res = await fetch(`${base}/v1/runs/${encodeURIComponent(id)}/events`, { headers: { Authorization: "Bearer " + ADMIN }, signal: ctl.signal });
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`run ${id} ended without an event ${key}`);
      buf += dec.decode(value, { stream: true });
      // Only whole lines: the last piece may be a line cut in two by the
      // stream's chunks, completed by the next read.
      const lines = buf.split("\n");
      buf = lines.pop();
      for (const line of lines) {
        if (line.startsWith("data: ") && match(JSON.parse(line.slice(6)))) return;
      }
    }
  } finally {
    clearTimeout(timer);
    ctl.abort();
  }
}

test("a conversation's transcript shows each reply once, and the failed turn", async () => {
  await api("POST", "/v1/swarms/desk/runs", { id: "desk-1" });
  await waitEvent("desk-1", "m1/await");
  for (const [n, message] of [[1, "hi"], [2, "book a hut"], [3, "please"]]) {
    const res = await api("POST", "/v1/runs/desk-1/resume", { message });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    await waitEvent("desk-1", `m${n + 1}/await`);
  }
  const page = await login();
  await page.goto(base + "/ui/runs/desk-1#transcript");
  await page.locator("#run[data-caught-up=true]").waitFor();
  const msgs = await page.locator("#transcript .msg").allTextContents();
  assert.deepEqual(msgs.filter((m) => m.includes("Hello, how can I help?")).length, 1, "the first reply once: " + msgs.join(" | "));
  assert.deepEqual(msgs.filter((m) => m.includes("Your hut is booked.")).length, 1, "the last reply once: " + msgs.join(" | "));
  assert.equal(msgs.length, 6, "three messages, two replies and a failed turn: " + msgs.join(" | "));
  const failed = page.locator("#transcript .msg.failed");
  assert.equal(await failed.count(), 1);
  assert.match(await failed.textContent(), /no answer.*model call by clerk failed/);
  // In order: the failed turn answers the second message.
  assert.match(msgs[3], /no answer/);
  await checkA11y(page, "conversation transcript");
  await shot(page, "run-conversation");
  await page.context().close();
});

// idleAfterMail accepts a teammate's going idle once it has read mail. A
// teammate reads mail at its next model call: the lead's mail may come
// before its first one or after it, so the piece of work it goes idle in
// after reading depends on the race, and only the order is certain.
function idleAfterMail() {
  let read = false;
  return (e) => {
    read ||= e.type === "inbox";
    return read && e.type === "member" && e.state === "idle";
  };
}

test("team events have one-line summaries", async () => {
  await api("POST", "/v1/swarms/crew/runs", { id: "crew-1" });
  await waitEvent("crew-1", "m1/await");
  assert.equal((await api("POST", "/v1/runs/crew-1/resume", { message: "go" })).status, 202);
  await waitEvent("crew-1", "m2/await");
  await waitEvent("crew-1~alice", idleAfterMail());
  const page = await login();
  await page.goto(base + "/ui/runs/crew-1");
  await page.locator("#run[data-caught-up=true]").waitFor();
  const sum = async (type) => {
    await page.locator(`#timeline li.ev-${type}`).first().waitFor();
    return (await page.locator(`#timeline li.ev-${type} .sum`).allTextContents()).join(" | ");
  };
  assert.match(await sum("member"), /alice is spawning/);
  assert.match(await sum("task"), /task #1 Test the parser: pending/);
  assert.match(await sum("mail"), /to alice: Use Go\./);
  await page.goto(base + "/ui/runs/" + encodeURIComponent("crew-1~alice"));
  await page.locator("#run[data-caught-up=true]").waitFor();
  assert.match(await sum("inbox"), /1 mail read: lead: Use Go\./);
  assert.match(await sum("member"), /alice is idle/);
  await shot(page, "run-teammate");
  await page.context().close();
});

test("stop a running run", async () => {
  await api("POST", "/v1/swarms/slow/runs", { id: "slow-1", input: "life" });
  const page = await login();
  await page.goto(base + "/ui/runs/slow-1");
  await page.locator("#run[data-caught-up=true]").waitFor();
  // Stop asks first: opening it stops nothing.
  await page.getByText("Stop run…").click();
  await checkA11y(page, "stop confirmation");
  await shot(page, "run-stop-confirm");
  assert.equal((await api("GET", "/v1/runs/slow-1")).body.state, "running", "opening Stop stops nothing");
  await page.getByLabel("Reason (kept in the journal)").fill("wrong input, starting over");
  await page.getByRole("button", { name: "Stop the run" }).click();
  await page.locator("#state .state-stopped").waitFor();
  const { body } = await api("GET", "/v1/runs/slow-1");
  assert.equal(body.state, "stopped");
  assert.equal(body.reason, "wrong input, starting over");
  assert.equal(await page.locator("#stop-box").count(), 0, "a stopped run has no Stop");
  await shot(page, "run-stopped");
  // Without a reason, the dashboard says who stopped it.
  await api("POST", "/v1/swarms/slow/runs", { id: "slow-2", input: "life" });
  await page.goto(base + "/ui/runs/slow-2");
  await page.getByText("Stop run…").click();
  await page.getByRole("button", { name: "Stop the run" }).click();
  await page.locator("#state .state-stopped").waitFor();
  assert.match((await api("GET", "/v1/runs/slow-2")).body.reason, /stopped from the dashboard by admin/);
  await page.context().close();
});

test("delete a finished run, after confirming", async () => {
  await api("POST", "/v1/swarms/approval/runs", { id: "hut-del", input: "a hut" });
  await waitState("hut-del", "paused");
  const page = await login();
  await page.goto(base + "/ui/runs/hut-del");
  assert.equal(await page.locator("#delete-box").count(), 0, "a paused run cannot be deleted");
  await api("POST", "/v1/runs/hut-del/stop", { reason: "not needed" });
  await page.reload();
  await page.getByText("Delete run…").click();
  await shot(page, "run-delete-confirm");
  assert.equal((await api("GET", "/v1/runs/hut-del")).status, 200, "opening Delete deletes nothing");
  await page.getByRole("button", { name: "Delete the run" }).click();
  await page.waitForURL(/\/ui\/\?deleted=hut-del/);
  assert.match(await page.locator("#deleted").textContent(), /Run hut-del was deleted/);
  assert.equal((await api("GET", "/v1/runs/hut-del")).status, 404);
  assert.equal(await page.locator('#rows a[title="hut-del"]').count(), 0);
  await page.context().close();
});

test("chat with a conversation from its transcript", async () => {
  await api("POST", "/v1/swarms/desk/runs", { id: "desk-chat" });
  await waitEvent("desk-chat", "m1/await");
  const page = await login();
  await page.goto(base + "/ui/runs/desk-chat");
  await page.locator("#run[data-caught-up=true]").waitFor();
  assert.ok(await page.locator("#pause").isHidden(), "no generic answer form for a conversation");
  // The timeline says where to answer, and the link opens the transcript.
  await page.getByRole("link", { name: "answer in the transcript" }).click();
  assert.equal(await page.getByRole("tab", { name: "Transcript" }).getAttribute("aria-selected"), "true");
  await page.getByLabel("Your message").fill("hi there");
  await page.getByRole("button", { name: "Send" }).click();
  await page.locator("#transcript .msg", { hasText: "Hello, how can I help?" }).waitFor();
  assert.match(await page.locator("#transcript .msg.user").first().textContent(), /hi there/);
  // It waits for the next message: the box is back, on the same page.
  await page.locator("#chat:not([hidden])").waitFor();
  await page.getByLabel("Your message").fill("book a hut");
  await page.getByRole("button", { name: "Send" }).click();
  await page.locator("#transcript .msg.failed").waitFor();
  await page.locator("#chat:not([hidden])").waitFor();
  await checkA11y(page, "conversation chat");
  await shot(page, "run-chat");
  await api("POST", "/v1/runs/desk-chat/stop", { reason: "done" }); // its stream ends
  const evs = await events("desk-chat");
  assert.deepEqual(evs.filter((e) => e.type === "resumed").map((e) => e.message), ["hi there", "book a hut"]);
  await page.context().close();
});

test("a team: chat with the lead, live roster and board, mail, tasks, shut down a teammate", async () => {
  await api("POST", "/v1/swarms/crew/runs", { id: "crew-ui" });
  await waitEvent("crew-ui", "m1/await");
  const page = await login();
  const team = await page.context().newPage();
  await team.goto(base + "/ui/teams/crew-ui");
  assert.equal(await team.locator("#team-live tr[data-member]").count(), 1, "only the lead before the first message");
  // The lead's chat box.
  await page.goto(base + "/ui/runs/crew-ui#transcript");
  await page.getByLabel("Your message").fill("go");
  await page.getByRole("button", { name: "Send" }).click();
  await page.locator("#transcript .msg", { hasText: "alice is on it." }).waitFor();
  // The team page shows the new teammate, the lead's mail and task
  // without a reload.
  await team.locator('#team-live tr[data-member="alice"]').waitFor();
  await team.locator("#team-live .mail-history td.mail-text", { hasText: "Use Go." }).waitFor();
  await team.locator("#team-live td", { hasText: "Test the parser" }).waitFor();
  await waitEvent("crew-ui~alice", idleAfterMail());
  // A task added elsewhere comes too.
  assert.equal((await api("POST", "/v1/teams/crew-ui/tasks", { subject: "Review the API" })).status, 201);
  await team.locator("#team-live td", { hasText: "Review the API" }).waitFor();
  await checkA11y(team, "team page");
  await shot(team, "team-live");

  // An idle teammate's page offers to mail it, not a generic answer.
  await page.goto(base + "/ui/runs/" + encodeURIComponent("crew-ui~alice"));
  await page.locator("#mail-card:not([hidden])").waitFor();
  assert.ok(await page.locator("#pause").isHidden());
  assert.equal(await page.locator("#mail-card-h").textContent(), "alice is idle, waiting for mail");
  await checkA11y(page, "teammate waiting for mail");
  await shot(page, "run-teammate-mail");
  await page.getByLabel("Mail to alice").fill("Also write tests.");
  await page.getByRole("button", { name: "Send mail" }).click();
  await page.waitForURL(base + "/ui/runs/" + encodeURIComponent("crew-ui~alice"));
  // alice reads the mail at her next model call and answers it: her second
  // or her third scripted answer, as the lead's mail came before her first
  // model call or after it.
  await page.locator("#timeline li.ev-inbox", { hasText: "user: Also write tests." }).waitFor();
  await page.locator('#timeline li.ev-inbox:has-text("user: Also write tests.") ~ li.ev-model_response').waitFor();

  // The team page's forms: mail every member, add a task.
  await team.reload();
  await team.getByLabel("To", { exact: true }).selectOption("*");
  await team.getByLabel("Message", { exact: true }).fill("Stand-up in five minutes.");
  await team.getByRole("button", { name: "Send mail" }).click();
  await team.waitForURL(base + "/ui/teams/crew-ui");
  const row = team.locator(".mail-history tr", { hasText: "Stand-up in five minutes." });
  await row.waitFor();
  assert.match(await row.textContent(), /you[\s\S]*lead, alice|you[\s\S]*alice, lead/, "one row for a broadcast, to both");
  await team.getByLabel("Subject", { exact: true }).fill("Write the docs");
  await team.getByLabel("Blocked by (task numbers, optional)").fill("1");
  await team.getByRole("button", { name: "Add task" }).click();
  await team.waitForURL(base + "/ui/teams/crew-ui");
  const { body: board } = await api("GET", "/v1/teams/crew-ui/tasks");
  const docs = board.tasks.find((t) => t.subject === "Write the docs");
  assert.ok(docs, "the task is on the board: " + JSON.stringify(board));
  assert.deepEqual(docs.blocked_by, [1]);
  await team.locator("#team-live td", { hasText: "Write the docs" }).waitFor();
  // The whole history: the lead's mail, alice's (read), and the user's.
  const history = await team.locator(".mail-history td.mail-text").allTextContents();
  for (const m of ["Use Go.", "Also write tests.", "Stand-up in five minutes."]) assert.ok(history.includes(m), m + " in " + history.join(" | "));
  await shot(team, "team-mail");

  // Shut alice down, with a reason, after confirming.
  await team.locator('tr[data-member="alice"]').getByText("Shut down…").click();
  await team.getByLabel("Reason", { exact: true }).fill("not needed any more");
  await team.getByRole("button", { name: "Shut down alice" }).click();
  await team.waitForURL(base + "/ui/teams/crew-ui");
  await waitState("crew-ui~alice", "stopped");
  assert.equal((await api("GET", "/v1/runs/" + encodeURIComponent("crew-ui~alice"))).body.reason, "not needed any more");
  await team.locator('tr[data-member="alice"]', { hasText: "not needed any more" }).waitFor();
  assert.match(await team.locator('tr[data-member="alice"]').innerText(), /\bstopped\b/, "a teammate shut down by a person shows stopped, not failed");
  assert.equal(await team.locator('tr[data-member="alice"] details').count(), 0, "an ended teammate cannot be shut down again");
  assert.deepEqual(await team.locator("#mail-to option").allTextContents(), ["lead"], "nor mailed");
  await shot(team, "team-shutdown");
  await page.context().close();
});

test("the conversations and cluster pages update live", async () => {
  const page = await login();
  await page.goto(base + "/ui/conversations");
  await page.locator("#conversations-live").waitFor();
  assert.equal(await page.locator('#conversations-live a[href="/ui/runs/desk-live#transcript"]').count(), 0);
  await api("POST", "/v1/swarms/desk/runs", { id: "desk-live" });
  await page.locator('#conversations-live a[href="/ui/runs/desk-live#transcript"]').waitFor();
  await page.goto(base + "/ui/cluster");
  assert.equal(await page.locator('#cluster-live a[href="/ui/runs/slow-live"]').count(), 0);
  await api("POST", "/v1/swarms/slow/runs", { id: "slow-live", input: "life" });
  await page.locator('#cluster-live a[href="/ui/runs/slow-live"]').waitFor();
  await api("POST", "/v1/runs/slow-live/stop", { reason: "done" });
  await page.locator('#cluster-live a[href="/ui/runs/slow-live"]').waitFor({ state: "detached" });
  await page.context().close();
});

test("fork a completed run from its second turn: earlier steps are reused", async () => {
  await api("POST", "/v1/swarms/trip/runs", { id: "trip-fork", input: "two people" });
  await waitState("trip-fork", "completed");
  const origin = await events("trip-fork");
  const page = await login();
  await page.goto(base + "/ui/runs/trip-fork");
  await page.locator("#run[data-loaded=true]").waitFor();
  await page.getByRole("button", { name: "Fork here: step t2/model" }).click();
  assert.equal(await page.getByLabel("From step (step key)").inputValue(), "t2/model");
  await page.getByRole("button", { name: "Start fork" }).click();
  await page.waitForURL((u) => /\/ui\/runs\/run_/.test(u.toString()));
  const id = decodeURIComponent(page.url().split("/ui/runs/")[1]);
  await page.locator("#state .state-completed").waitFor();
  await page.locator("#run[data-loaded=true]").waitFor();
  assert.match(await page.locator(".fork-of").textContent(), /forked from trip-fork at t2\/model/);
  const fork = await events(id);
  assert.equal(fork[0].fork_of, "trip-fork");
  const reused = fork[0].reused;
  assert.equal(reused, origin.findIndex((e) => e.key === "t2/model") - 1, "everything before t2/model is reused");
  assert.equal(await page.locator("#timeline li.reused").count(), reused);
  // The reused model calls are the origin's records (same time), not new
  // calls; turn 2 and 3 were called again, after the fork started.
  for (const e of fork.slice(1, reused + 1)) {
    const o = origin.find((x) => x.key === e.key);
    assert.equal(e.time, o.time, `reused ${e.key} keeps the origin's time`);
  }
  const t2 = fork.find((e) => e.key === "t2/model");
  assert.ok(new Date(t2.time) > new Date(fork[0].time), "turn 2's model call was made again");
  // Its duration counts from the fork's start, not from the origin's
  // reused record before it; the chart leaves the reused steps out.
  const dur = page.locator(`#timeline li.ev[data-seq="${t2.seq}"] .dur`);
  assert.equal(Number(await dur.getAttribute("data-ms")), Date.parse(t2.time) - Date.parse(fork[0].time));
  await page.getByRole("tab", { name: "Gantt" }).click();
  await page.locator("#gantt .g-bar").first().waitFor();
  assert.equal(await page.locator("#gantt .g-model .g-bar").count(), fork.filter((e) => e.type === "model_response" && e.seq > reused + 1).length);
  await shot(page, "run-fork-gantt");
  await page.getByRole("tab", { name: "Timeline" }).click();
  const { body } = await api("GET", `/v1/runs/${id}`);
  assert.equal(body.result, "Hike on Saturday with a guide; the hut and the bus are booked.");
  await shot(page, "run-fork");
  await page.context().close();
});

test("fork with a tool result edited: the fork keeps the edit and runs on from it", async () => {
  await api("POST", "/v1/swarms/approval/runs", { id: "ap-edit", input: "a hut" });
  await waitState("ap-edit", "paused");
  await api("POST", "/v1/runs/ap-edit/resume", { message: "yes" });
  await waitState("ap-edit", "completed");
  const page = await login();
  await page.goto(base + "/ui/runs/ap-edit");
  await page.locator("#run[data-loaded=true]").waitFor();
  const key = "t2/tool/call_approval_1_0"; // the booking's result
  await page.getByRole("button", { name: "Fork here: step " + key }).click();
  const output = page.getByLabel("Its output in the fork");
  assert.match(await output.inputValue(), /hut/, "the form offers the recorded output");
  await output.fill("no huts left\nbook a tent instead");
  assert.ok(await page.getByLabel(/keep this step/).isChecked(), "changing the output asks for the edit");
  await shot(page, "run-fork-edit-form");
  await page.getByRole("button", { name: "Start fork" }).click();
  await page.waitForURL((u) => /\/ui\/runs\/run_/.test(u.toString()));
  const id = decodeURIComponent(page.url().split("/ui/runs/")[1]);
  await page.locator("#state .state-completed").waitFor();
  await page.locator("#run[data-loaded=true]").waitFor();
  const fork = await events(id);
  assert.equal(fork[0].fork_at, key);
  const ev = fork.find((e) => e.key === key);
  assert.equal(ev.edited, true);
  assert.equal(ev.output, "no huts left\nbook a tent instead");
  assert.equal(await page.locator(`#timeline li.ev[data-seq="${ev.seq}"] .badge.edited`).count(), 1, "the edited record is marked");
  assert.equal(await page.locator("#timeline .badge.edited").count(), 1);
  await shot(page, "run-fork-edited");
  await page.context().close();
});

test("inspect the request a model call sent: system prompt, messages, tools", async () => {
  await api("POST", "/v1/swarms/trip/runs", { id: "trip-inspect", input: "two people" });
  await waitState("trip-inspect", "completed");
  const page = await login();
  await page.goto(base + "/ui/runs/trip-inspect");
  await page.locator("#run[data-loaded=true]").waitFor();
  await page.getByRole("button", { name: "Inspect request: step t3/model" }).click();
  const box = page.getByRole("region", { name: "Request of step t3/model" });
  await box.locator(".inspect-total").waitFor();
  assert.equal(await box.locator(".inspect-system pre").textContent(), "Plan a trip for two people.");
  const tools = await box.locator(".inspect-tools .tool-name").allTextContents();
  assert.ok(tools.includes("book") && tools.includes("handoff_to_guide"), "tools: " + tools.join(","));
  // The request of turn 3 holds the input, two rounds of calls and their
  // results (the child swarm guide's among them).
  const messages = await box.locator(".inspect-messages li").allTextContents();
  assert.equal(messages.length, 7, "messages: " + messages.join(" | "));
  assert.match(messages[6], /guide booked/);
  assert.match(await box.locator(".inspect-total").textContent(), /≈\d+ tokens estimated \(chars\/4.*verified against the journal/);
  await checkA11y(page, "request inspector");
  await box.scrollIntoViewIfNeeded();
  await shot(page, "run-inspect");
  await page.getByRole("button", { name: "Inspect request: step t3/model" }).click();
  assert.equal(await box.count(), 0, "a second click closes the inspector");
  await page.context().close();
});

test("reload mid-run and see the same history", async () => {
  await api("POST", "/v1/swarms/trip/runs", { id: "trip-reload", input: "two people" });
  const page = await login();
  await page.goto(base + "/ui/runs/trip-reload");
  await page.locator("#timeline li.ev-handoff_started").first().waitFor();
  const before = await page.locator("#timeline li.ev .ev-head").allTextContents();
  await page.reload();
  await page.locator("#state .state-completed").waitFor();
  await page.locator("#run[data-loaded=true]").waitFor();
  const afterRows = await page.locator("#timeline li.ev .ev-head").allTextContents();
  assert.ok(before.length >= 3, "reloaded in the middle of the run");
  assert.deepEqual(afterRows.slice(0, before.length), before, "the history before the reload is the same after it");
  assert.equal(afterRows.length, (await events("trip-reload")).length);
  await page.context().close();
});

test("the runs list updates live", async () => {
  const page = await login();
  await page.goto(base + "/ui/?swarm=approval");
  assert.equal(await page.locator('#rows a[title="hut-live"]').count(), 0);
  await api("POST", "/v1/swarms/approval/runs", { id: "hut-live", input: "a hut" });
  // No reload: the page refreshes its rows by itself.
  await page.locator('#rows a[title="hut-live"]').waitFor();
  await page.locator('#rows tr:has(a[title="hut-live"]) .state-paused').waitFor();
  await page.context().close();
});

test("a token limited to one swarm does not see another's runs", async () => {
  const page = await login(LIMITED);
  const ids = await page.locator("#rows td.id a").allTextContents();
  assert.ok(ids.includes("hut-1"), "the approval run is listed: " + ids.join(","));
  assert.ok(!ids.some((i) => i.startsWith("trip") || i.startsWith("slow")), "no run of another swarm is listed: " + ids.join(","));
  await shot(page, "runs-limited");
  const res = await page.goto(base + "/ui/runs/trip-fork");
  assert.equal(res.status(), 403);
  const ev = await page.goto(base + "/v1/runs/trip-fork/events");
  assert.equal(ev.status(), 403, "the event stream is refused too, with the cookie");
  await page.goto(base + "/ui/?swarm=trip");
  assert.equal(await page.locator("h1").textContent(), "Not allowed");
  await page.goto(base + "/ui/swarms");
  assert.deepEqual(await page.locator(".swarm h2").allTextContents(), ["approval"]);
  await page.context().close();
});

test("pages: cluster, conversations, teams, login; keyboard focus", async () => {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const anon = await ctx.newPage();
  await anon.goto(base + "/ui/login");
  await checkA11y(anon, "login");
  await shot(anon, "login");
  await anon.getByLabel("Token").fill("wrong");
  await anon.getByRole("button", { name: "Log in" }).click();
  assert.equal(await anon.locator(".error").textContent(), "That token is not valid here.");
  await ctx.close();

  const page = await login();
  for (const [link, name] of [["Node & cluster", "cluster"], ["Conversations", "conversations"], ["Teams", "teams"]]) {
    await page.getByRole("link", { name: link }).click();
    await page.locator("h1").waitFor();
    await checkA11y(page, name);
    await shot(page, name);
  }
  assert.match(await page.locator("main").textContent(), /roster/);
  // Keyboard: the first Tab reaches the skip link, the next ones the
  // navigation, and every focused element shows a focus ring.
  await page.goto(base + "/ui/");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.textContent), "Skip to content");
  await page.keyboard.press("Enter");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.id), "f-q", "after skipping, focus is on the search field");
  const ring = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.equal(ring, "solid", "the focused field has a visible outline");
  await page.context().close();
});

test("durations, the Gantt view, filters and text search of a run", async () => {
  await api("POST", "/v1/swarms/trip/runs", { id: "trip-gantt", input: "a Gantt party" });
  await waitState("trip-gantt", "completed");
  const journal = await events("trip-gantt");
  const at = (key) => Date.parse(journal.find((e) => e.key === key).time);
  const page = await login();
  await page.goto(base + "/ui/runs/trip-gantt");
  await page.locator("#run[data-loaded=true]").waitFor();

  // Durations come from the journal's times: a model call from the
  // record before it, a tool from its call, a handoff from its start.
  const ms = async (key) => Number(await page.locator(`#timeline li.ev:has(code.key:text-is("${key}")) .dur`).getAttribute("data-ms"));
  assert.equal(await ms("t1/model"), at("t1/model") - at("start"), "the first model call runs from the start");
  assert.equal(await ms("t2/model"), at("t2/model") - at("t1/done"), "the second from the end of the first turn");
  assert.equal(await ms("t1/h/call_trip_0_0/t1/model"), at("t1/h/call_trip_0_0/t1/model") - at("t1/call/call_trip_0_0"), "the weather agent's call from its handoff");
  assert.equal(await ms("t1/tool/call_trip_0_1"), at("t1/tool/call_trip_0_1") - at("t1/call/call_trip_0_1"), "a tool from its call");
  assert.equal(await ms("t2/tool/call_trip_1_0"), at("t2/tool/call_trip_1_0") - at("t2/call/call_trip_1_0"), "the child run from its start");
  assert.match(await page.locator("#timeline li.ev-model_response .dur").first().textContent(), /^\d+ ms$|^\d+\.\d+ s$/);

  // The Gantt view: a bar per model call, tool and handoff, the inline
  // handoff's call nested under it, and the time per agent.
  await page.getByRole("tab", { name: "Gantt" }).click();
  await page.locator("#gantt .g-bar").first().waitFor();
  assert.equal(await page.locator("#gantt .g-model .g-bar").count(), journal.filter((e) => e.type === "model_response").length);
  assert.equal(await page.locator("#gantt .g-tool .g-bar").count(), 2, "two book calls");
  assert.equal(await page.locator("#gantt .g-handoff .g-bar").count(), 1, "the handoff to weather");
  assert.equal(await page.locator("#gantt .g-child .g-bar").count(), 1, "the child run of guide");
  assert.equal(await page.locator("#gantt .g-model[data-depth='1'] .g-label").textContent(), "weather · model call");
  assert.equal(await page.locator("#gantt .g-handoff .g-label").textContent(), "trip · handoff → weather");
  const agents = await page.locator("#gantt .g-agents tbody th").allTextContents();
  assert.deepEqual(agents.sort(), ["trip", "weather"]);
  assert.match(await page.locator("#run-duration").textContent(), /\d/);
  // Bars sit on the time axis: the first model call spans its share of
  // the run, from the left edge.
  const first = page.locator("#gantt .g-model .g-bar").first();
  const bar = await first.boundingBox();
  const track = await first.locator("xpath=..").boundingBox();
  const total = Date.parse(journal.at(-1).time) - at("start");
  assert.ok(Math.abs(bar.x - track.x) < 2, "the first bar starts at the run's start");
  assert.ok(Math.abs(bar.width / track.width - (at("t1/model") - at("start")) / total) < 0.01, `the first bar's width ${bar.width} of ${track.width} is its share of the run`);
  await checkA11y(page, "Gantt view");
  await shot(page, "run-gantt");
  // A bar shows its event.
  await page.locator("#gantt .g-child .g-bar").click();
  assert.equal(await page.getByRole("tab", { name: "Timeline" }).getAttribute("aria-selected"), "true");
  const picked = page.locator("#timeline li.picked");
  assert.equal(await picked.getAttribute("data-seq"), String(journal.find((e) => e.key === "t2/tool/call_trip_1_0").seq));
  assert.ok(await picked.isVisible());

  // Filters: by type, by agent, by text (ignoring case).
  const visible = async () => page.locator("#timeline li.ev:visible").evaluateAll((lis) => lis.map((li) => li.className));
  await page.getByLabel("Type").selectOption("tool_result");
  let rows = await visible();
  assert.equal(rows.length, 2, "two tool results: " + rows.join(","));
  assert.ok(rows.every((c) => c.includes("ev-tool_result")), rows.join(","));
  assert.equal(await page.locator("#ev-shown").textContent(), "2 shown");
  await shot(page, "run-filter-type");
  await page.getByLabel("Type").selectOption("");
  await page.getByLabel("Agent").selectOption("weather");
  rows = await visible();
  assert.deepEqual(rows.map((c) => c.split(" ")[1]), ["ev-model_response"], "the weather agent's one event");
  await page.getByLabel("Agent").selectOption("");
  await page.getByLabel("Find").fill("SUNNY");
  await page.locator("#ev-shown", { hasText: "2 shown" }).waitFor();
  rows = await visible();
  assert.deepEqual(rows.map((c) => c.split(" ")[1]), ["ev-model_response", "ev-handoff_returned"], "the forecast and its return");
  await shot(page, "run-filter-text");
  await page.getByLabel("Find").fill("");
  await page.locator("#ev-shown:empty").waitFor({ state: "attached" });
  assert.equal((await visible()).length, journal.length, "cleared filters show every event");

  // The runs list searches inputs, results and reasons.
  await page.goto(base + "/ui/?text=" + encodeURIComponent("gantt PARTY"));
  assert.deepEqual(await page.locator("#rows td.id a").allTextContents(), ["trip-gantt"]);
  await checkA11y(page, "runs list searched");
  await shot(page, "runs-text-search");
  await page.context().close();
});

test("a workflow's Nodes tab: each node's state, live, and its events on the timeline", async () => {
  const { body } = await api("POST", "/v1/swarms/review/runs", { input: "the news" });
  await waitState(body.id, "paused");
  const page = await login();
  await page.goto(`${base}/ui/runs/${body.id}`);
  await page.getByRole("tab", { name: "Nodes" }).click();
  const nodes = page.locator("#panel-nodes");
  await nodes.locator('li[data-key="review/approve"][data-state="waiting"]').waitFor();
  assert.equal(await nodes.locator('li[data-key="review/draft"]').getAttribute("data-state"), "done");
  assert.equal(await nodes.locator('svg a[data-node="review/approve"] rect.wf-s-waiting').count(), 1, "the drawing marks the waiting node");
  await checkA11y(page, "workflow nodes");
  await shot(page, "workflow-nodes");
  // Answered from the API, the tab follows: the human node is done.
  assert.equal((await api("POST", `/v1/runs/${body.id}/resume`, { message: '"yes"' })).status, 202);
  await waitState(body.id, "completed");
  await nodes.locator('li[data-key="review/approve"][data-state="done"]').waitFor();
  // A node's events: the timeline shows only the records under its key.
  await nodes.locator('li[data-key="review/draft"] a.wf-events').click();
  await page.waitForURL(/find=key%3Areview%2Fdraft/);
  // The run is over once answered: the page has read its whole journal.
  await page.locator('#run[data-loaded="true"]').waitFor();
  const keys = await page.locator("#timeline li.ev").evaluateAll((els) => els.length);
  const all = (await events(body.id)).filter((e) => e.key && (e.key === "review/draft" || e.key.startsWith("review/draft/"))).length;
  assert.ok(all > 0 && all < (await events(body.id)).length, "the draft node has some of the run's records, not all");
  assert.equal(keys, all, "the timeline lists the draft node's records, and only those");
  await page.context().close();
});
