// Browser test of a run's parts on its page: a run started through the
// API with a chart (a PNG large enough to be kept as a file of the run), a
// small PNG (kept inline in the journal), a PDF report, an SVG and an
// image at a URL. Debian's Chromium shows both PNGs in the timeline and
// the transcript, offers the PDF and the SVG as downloads (never as
// images), and links the URL without loading it. Screenshots go to
// out/screenshots.
//
//   cd dashboard/e2e && npm ci && node --test parts.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, cpSync, rmSync, readFileSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { serve, stop, swarmBin, launchChromium, checkA11y } from "./serve.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "out");
const shots = path.join(out, "screenshots");
const work = path.join(out, "work-parts");
const ADMIN = "admin-secret-0123456789";
const T = 30_000; // the bound of every wait

const fixture = (name) => readFileSync(path.join(here, "testdata-parts", name));
const chart = fixture("chart.png");
const dot = fixture("dot.png");
const pdf = fixture("report.pdf");
const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script><rect width="10" height="10"/></svg>');
const remote = "https://images.example.invalid/cat.png";
const sha256 = (b) => createHash("sha256").update(b).digest("hex");

let server, base, browser, id;

async function waitDone(run) {
  for (const deadline = Date.now() + T; ;) {
    const st = await (await fetch(`${base}/v1/runs/${run}`, { headers: { Authorization: "Bearer " + ADMIN } })).json();
    if (st.state === "completed") return;
    assert.notEqual(st.state, "failed", "the run failed: " + st.reason);
    assert.ok(Date.now() < deadline, "the run did not complete: " + st.state);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startRun(swarm, body) {
  const res = await fetch(`${base}/v1/swarms/${swarm}/runs`, {
    method: "POST",
    headers: { Authorization: "Bearer " + ADMIN, "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(T),
  });
  assert.equal(res.status, 201, await res.text());
  await waitDone(body.id);
}

before(async () => {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mkdirSync(shots, { recursive: true });
  cpSync(path.join(here, "testdata-parts"), work, { recursive: true });
  ({ proc: server, base } = await serve(swarmBin(out), work, { SWARM_TOKENS: `admin:${ADMIN}:*` }, T));
  browser = await launchChromium(chromium);
  const parts = [
    { type: "image", media_type: "image/png", name: "chart.png", data: chart.toString("base64") },
    { type: "file", media_type: "application/pdf", name: "report.pdf", data: pdf.toString("base64") },
    { type: "image", media_type: "image/png", name: "dot.png", data: dot.toString("base64") },
    { type: "image", media_type: "image/svg+xml", name: "logo.svg", data: svg.toString("base64") },
    { type: "image", url: remote },
  ];
  id = "look-1";
  await startRun("vision", { id, input: "What do these show?", parts });
  await startRun("charts", { id: "chart-1", input: "sales" });
});

after(async () => {
  if (browser) await browser.close();
  await stop(server);
});

async function login(run = id) {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  await page.goto(base + "/ui/runs/" + run);
  await page.getByLabel("Token").fill(ADMIN);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL(base + "/ui/runs/" + run);
  return page;
}

// loaded waits for img to be decoded and returns its natural width.
async function loaded(img) {
  await img.waitFor();
  await img.evaluate((e) => (e.complete ? null : new Promise((r) => { e.onload = e.onerror = r; })));
  return img.evaluate((e) => e.naturalWidth);
}

test("a run's images are shown and its files offered as downloads", async () => {
  const page = await login();
  const remoteRequests = [];
  page.on("request", (r) => { if (r.url().includes("example.invalid")) remoteRequests.push(r.url()); });
  await page.reload();
  await page.locator("#run[data-loaded=true]").waitFor();
  const row = page.locator("#timeline li.ev-started");
  const file = `/ui/runs/${id}/blobs/`;

  // The chart is a file of the run, shown from the dashboard's route.
  const chartImg = row.locator(`.part-image img[src="${file}${sha256(chart)}?name=chart.png"]`);
  assert.equal(await loaded(chartImg), 240, "the chart is decoded at its width");
  assert.match(await chartImg.getAttribute("alt"), /chart\.png/);
  // The small PNG rides in the event itself.
  const dotImg = row.locator(".part-image img[src^='data:image/png;base64,']");
  assert.equal(await loaded(dotImg), 12, "the small PNG is decoded from its bytes");
  assert.equal(await row.locator(".part-image img").count(), 2, "only the PNGs are images: not the SVG, the PDF or the URL");

  // The PDF is a download of the right file under its name.
  const pdfLink = row.getByRole("link", { name: "Download report.pdf" });
  assert.equal(await pdfLink.getAttribute("href"), `${file}${sha256(pdf)}?name=report.pdf`);
  assert.equal(await pdfLink.getAttribute("download"), "report.pdf");
  assert.match(await row.locator(".part-file", { hasText: "report.pdf" }).textContent(), /application\/pdf · 5\.3 KB/);
  const [download] = await Promise.all([page.waitForEvent("download"), pdfLink.click()]);
  assert.equal(download.suggestedFilename(), "report.pdf");
  assert.ok(readFileSync(await download.path()).equals(pdf), "the download is the PDF's bytes");
  const res = await page.context().request.get(base + (await pdfLink.getAttribute("href")));
  assert.equal(res.headers()["content-disposition"], "attachment; filename=report.pdf");
  assert.equal(res.headers()["content-type"], "application/octet-stream");
  assert.equal(res.headers()["x-content-type-options"], "nosniff");

  // The SVG (which holds a script) is a download, never an image.
  const svgLink = row.getByRole("link", { name: "Download logo.svg" });
  assert.match(await svgLink.getAttribute("href"), /^data:application\/octet-stream;base64,/);
  assert.equal(await svgLink.getAttribute("download"), "logo.svg");

  // The image at a URL is a link, not loaded.
  const urlLink = row.locator(`.part-url a[href="${remote}"]`);
  assert.equal(await urlLink.getAttribute("rel"), "noopener noreferrer nofollow");
  assert.deepEqual(remoteRequests, [], "the page loads nothing from the URL");

  await checkA11y(page, "run with parts");
  await row.scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(shots, "run-parts-timeline.png") });

  // The thumbnail opens the chart at full size, as an image.
  const [full] = await Promise.all([page.waitForEvent("popup"), chartImg.click()]);
  await full.waitForLoadState();
  assert.equal(full.url(), base + file + sha256(chart) + "?name=chart.png");
  assert.equal(await full.locator("img").evaluate((e) => e.naturalWidth), 240);
  await full.screenshot({ path: path.join(shots, "run-parts-full-size.png") });
  await full.close();

  // The transcript shows the user's attachments in their message.
  await page.getByRole("tab", { name: "Transcript" }).click();
  const msg = page.locator("#transcript .msg.user.with-parts");
  assert.equal(await loaded(msg.locator(`img[src="${file}${sha256(chart)}?name=chart.png"]`)), 240);
  assert.equal(await msg.getByRole("link", { name: "Download report.pdf" }).getAttribute("href"), `${file}${sha256(pdf)}?name=report.pdf`);
  assert.match(await page.locator("#transcript").textContent(), /A bar chart of five quarters/);
  await checkA11y(page, "transcript with parts");
  await page.screenshot({ path: path.join(shots, "run-parts-transcript.png") });
  assert.deepEqual(remoteRequests, [], "the transcript loads nothing from the URL either");
  await page.context().close();
});

test("a tool's images and files are shown with its result", async () => {
  const run = "chart-1";
  const page = await login(run);
  await page.locator("#run[data-loaded=true]").waitFor();
  const file = `/ui/runs/${run}/blobs/`;
  // The tool's result row, and its card beside the call.
  for (const where of ["#timeline li.ev-tool_result", "#timeline li.ev-model_response .call"]) {
    const box = page.locator(where).first();
    const img = box.locator(".part-image img");
    assert.equal(await loaded(img), 240, where + ": the tool's chart is decoded");
    assert.ok((await img.getAttribute("src")).startsWith(`${file}${sha256(chart)}`), where + ": the chart is the run's file");
    const link = box.getByRole("link", { name: "Download sales.pdf" });
    assert.equal(await link.getAttribute("href"), `${file}${sha256(pdf)}?name=sales.pdf`, where);
  }
  await checkA11y(page, "tool result with parts");
  await page.screenshot({ path: path.join(shots, "run-tool-parts-timeline.png") });

  await page.getByRole("tab", { name: "Transcript" }).click();
  const msg = page.locator("#transcript .msg.tool.with-parts");
  assert.match(await msg.locator(".who").textContent(), /charter__draw_chart/);
  assert.equal(await loaded(msg.locator(".part-image img")), 240);
  assert.equal(await msg.getByRole("link", { name: "Download sales.pdf" }).getAttribute("href"), `${file}${sha256(pdf)}?name=sales.pdf`);
  await page.screenshot({ path: path.join(shots, "run-tool-parts-transcript.png") });
  await page.context().close();
});
