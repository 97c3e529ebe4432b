// The run page with large journals: a run of 10,000 events and one of
// 100,000, written straight into a SQLite store (go run ./gen) and served
// by `swarm serve`. It reports, for each, the time to the first timeline
// row, the time until the page is usable (every event loaded, the
// controls answering), the page's DOM nodes and the JS heap, as the median
// of several loads; it prints them and writes them to
// out/large-run.json. Times are reported, not asserted (the machine's load
// decides them); what is asserted is that the page works: every event is
// counted, the newest and the oldest reachable by scrolling, the filters
// and the Gantt view answer, and the DOM stays small.
//
//   cd dashboard/e2e && npm ci && node --test large.test.mjs
//
// LARGE_RUNS sets how many loads each median takes (default 5 for 10,000
// events, and that many less 2 for 100,000).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, cpSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { serve, stop, swarmBin, launchChromium } from "./serve.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "out");
const work = path.join(out, "large");
const shots = path.join(out, "screenshots");
const T = 120_000;
const loads = Number(process.env.LARGE_RUNS || 5);

let server, base, browser;
const figures = { machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, load: os.loadavg() }, runs: {} };

before(async () => {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(path.join(work, ".swarm"), { recursive: true });
  mkdirSync(shots, { recursive: true });
  cpSync(path.join(here, "testdata"), work, { recursive: true });
  const root = path.join(here, "..", "..");
  const db = path.join(work, ".swarm", "runs.db");
  for (const [id, n] of [["big10k", 10_000], ["big100k", 100_000]]) {
    execFileSync("go", ["run", "./dashboard/e2e/gen", "-store", db, "-runs", "0", "-events", String(n), "-id", id], { cwd: root, stdio: "inherit" });
  }
  ({ proc: server, base } = await serve(swarmBin(out), work, {}, T));
  browser = await launchChromium(chromium);
});

after(async () => {
  if (browser) await browser.close();
  await stop(server);
  figures.machine.loadAfter = os.loadavg();
  writeFileSync(path.join(out, "large-run.json"), JSON.stringify(figures, null, 2) + "\n");
});

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

// load opens run id's page and returns when it is usable, with the times
// of its first row and of its being usable (ms since navigation start),
// taken in the page by a MutationObserver: no polling from here.
async function load(id) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(T);
  await page.addInitScript(() => {
    const seen = () => {
      if (window.__firstRow === undefined && document.querySelector("#timeline li.ev")) window.__firstRow = performance.now();
      const run = document.getElementById("run");
      if (window.__usable === undefined && run && run.dataset.loaded === "true") window.__usable = performance.now();
    };
    new MutationObserver(seen).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-loaded"] });
  });
  await page.goto(base + "/ui/runs/" + id, { waitUntil: "commit" });
  await page.locator("#run[data-loaded=true]").waitFor({ state: "attached" });
  const m = await page.evaluate(() => ({
    firstRow: window.__firstRow,
    usable: window.__usable,
    nodes: document.getElementsByTagName("*").length,
    rows: document.querySelectorAll("#timeline li.ev").length,
    heap: performance.memory ? performance.memory.usedJSHeapSize : null,
  }));
  return { page, m };
}

async function measure(id, times) {
  const n = (await (await fetch(base + "/v1/runs/" + id)).json()).last_seq;
  const all = [];
  let page;
  for (let i = 0; i < times; i++) {
    if (page) await page.close();
    const r = await load(id);
    page = r.page;
    all.push(r.m);
  }
  const f = {
    events: n,
    loads: times,
    firstRowMs: Math.round(median(all.map((x) => x.firstRow))),
    usableMs: Math.round(median(all.map((x) => x.usable))),
    domNodes: median(all.map((x) => x.nodes)),
    renderedRows: median(all.map((x) => x.rows)),
    heapMB: all[0].heap === null ? null : Math.round(median(all.map((x) => x.heap)) / 1e5) / 10,
    each: all.map((x) => ({ firstRow: Math.round(x.firstRow), usable: Math.round(x.usable), nodes: x.nodes })),
  };
  figures.runs[id] = f;
  console.log(`run page, ${n} events: first row ${f.firstRowMs} ms, usable ${f.usableMs} ms, ${f.domNodes} DOM nodes, ${f.renderedRows} rows rendered, heap ${f.heapMB} MB (median of ${times} loads; load average ${os.loadavg()[0].toFixed(1)})`);
  return { page, n, f };
}

// works checks that a loaded page of run id (n events) is whole and
// answers: the count, the newest and oldest rows, a filter, the Gantt view.
// It adds to f the time a search across every event took (typing to the
// one row shown, with the box's 150 ms pause for typing) and the time the
// Gantt view took to show its bars, both as seen from here.
async function works(page, n, f) {
  assert.equal(await page.locator("#count").textContent(), String(n), "every event is counted");
  // The usage of the run, added up on the server (for a long journal
  // after the page came).
  await page.locator("#usage tfoot", { hasText: /Tree\s*\d/ }).waitFor();
  assert.ok(await page.evaluate(() => document.getElementsByTagName("*").length) < 5000, "the DOM holds a window of the rows, not all of them");
  // The end of the page holds the newest event.
  await page.keyboard.press("End");
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
  await page.locator(`#timeline li.ev[data-seq="${n}"]`).waitFor();
  assert.match(await page.locator(`#timeline li.ev[data-seq="${n}"] .type`).textContent(), /completed/);
  // And the top the oldest again.
  // The End key starts a smooth scroll that may still be under way and
  // carry the page back down: scroll up until the top stays put.
  const oldest = page.locator('#timeline li.ev[data-seq="1"]');
  for (let i = 0; i < 40 && !(await oldest.isVisible()); i++) {
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.waitForTimeout(250);
  }
  await oldest.waitFor();
  // A filter reaches across every event: one round's model call, far
  // down the journal.
  const round = Math.floor(n / 6) - 2;
  let t = performance.now();
  await page.getByLabel("Find").fill(`for round t${round}`);
  await page.locator("#ev-shown", { hasText: /^1 shown$/ }).waitFor();
  f.searchMs = Math.round(performance.now() - t);
  await page.locator(`#timeline li.ev-model_response:has-text("round t${round}")`).waitFor();
  await page.getByLabel("Find").fill("");
  await page.locator("#ev-shown:empty").waitFor({ state: "attached" });
  await page.getByLabel("Type").selectOption("completed");
  await page.locator("#ev-shown", { hasText: /^1 shown$/ }).waitFor();
  await page.getByLabel("Type").selectOption("");
  // The Gantt view draws every step, and a bar far down shows its event.
  t = performance.now();
  await page.getByRole("tab", { name: "Gantt" }).click();
  await page.locator("#gantt .g-bar").first().waitFor();
  f.ganttMs = Math.round(performance.now() - t);
  assert.ok(await page.evaluate(() => document.getElementsByTagName("*").length) < 8000, "the Gantt view holds a window of its rows");
  assert.equal(await page.locator("#gantt .g-steps").textContent(), String(Math.floor((n - 2) / 6) * 3), "a bar per model call and tool");
  console.log(`  then: a search across every event ${f.searchMs} ms, the Gantt view ${f.ganttMs} ms`);
}

test("a run of 10,000 events: figures, and the page works", async () => {
  const { page, n, f } = await measure("big10k", loads);
  await works(page, n, f);
  await page.screenshot({ path: path.join(shots, "run-10k-gantt.png") });
  await page.close();
});

test("a run of 100,000 events still works", async () => {
  const { page, n, f } = await measure("big100k", Math.max(loads - 2, 1));
  await works(page, n, f);
  await page.close();
});
