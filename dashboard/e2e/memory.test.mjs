// Browser test of the dashboard's memory pages: the memory example's
// support agent (examples/memory, a scripted model) runs twice through the
// swarm command, for two customers, so that the store holds two banks;
// then a real `swarm serve` on that directory shows them in Debian's
// Chromium, and an entry is deleted after confirming. Screenshots go to
// out/screenshots.
//
//   cd dashboard/e2e && npm ci && node --test memory.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, cpSync, rmSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { serve, stop, swarmBin, launchChromium, checkA11y } from "./serve.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "out");
const shots = path.join(out, "screenshots");
const work = path.join(out, "work-memory");
const ADMIN = "admin-secret-0123456789";
const LIMITED = "support-only-secret-0123";
const T = 30_000; // the bound of every wait

let server, base, browser;

before(async () => {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mkdirSync(shots, { recursive: true });
  for (const f of ["swarm.yaml", "script.yaml"]) cpSync(path.join(here, "..", "..", "examples", "memory", f), path.join(work, f));
  const bin = swarmBin(out);
  // Each run writes the customer's seat preference to bank user:<name>.
  for (const user of ["ida", "bo"]) {
    execFileSync(bin, ["run", "-q", "--id", "book-" + user, "--values", JSON.stringify({ user }), "support", "Book me on the Lisbon flight, aisle seat please"], { cwd: work, timeout: T });
  }
  ({ proc: server, base } = await serve(bin, work, { SWARM_TOKENS: `admin:${ADMIN}:*;ops:${LIMITED}:support` }, T));
  browser = await launchChromium(chromium);
});

after(async () => {
  if (browser) await browser.close();
  await stop(server);
});

async function api(method, p, token = ADMIN) {
  const res = await fetch(base + p, { method, headers: { Authorization: "Bearer " + token }, signal: AbortSignal.timeout(T) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function login(token) {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  await page.goto(base + "/ui/memory");
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL(base + "/ui/memory");
  return page;
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(shots, name + ".png"), fullPage: true });
}

test("list the banks, open one and delete an entry after confirming", async () => {
  const page = await login(ADMIN);
  assert.equal(await page.locator("nav.side a[aria-current=page]").textContent(), "Memory");
  assert.deepEqual(await page.locator("#banks tbody td.id a").allTextContents(), ["user:bo", "user:ida"], "both customers' banks, by name");
  await checkA11y(page, "memory banks");
  await shot(page, "memory-banks");

  await page.getByRole("link", { name: "user:ida" }).click();
  await page.waitForURL(base + "/ui/memory/user:ida");
  const row = page.locator("#entries tbody tr", { hasText: "preferences/seat" });
  assert.match(await row.textContent(), /Prefers an aisle seat/);
  assert.match(await row.textContent(), /seat, flights/);
  await checkA11y(page, "memory bank");

  // Opening Delete asks first and deletes nothing.
  await row.getByText("Delete entry preferences/seat…").click();
  const confirm = row.getByRole("button", { name: "Delete the entry" });
  await confirm.waitFor();
  assert.equal((await api("GET", "/v1/memory/user:ida")).body.entries.length, 1, "opening Delete deletes nothing");
  await checkA11y(page, "memory delete confirmation");
  await shot(page, "memory-bank-delete-confirm");
  await confirm.click();
  await page.waitForURL(/\/ui\/memory\/user:ida\?deleted=preferences%2Fseat/);
  assert.match(await page.locator("#deleted").textContent(), /Entry preferences\/seat was deleted/);
  assert.match(await page.locator("#entries tbody").textContent(), /This bank holds no entries/);
  await shot(page, "memory-bank-deleted");

  const { body } = await api("GET", "/v1/memory/user:ida");
  assert.equal(body.entries.length, 0, "the entry is gone from the store");
  assert.equal((await api("GET", "/v1/memory/user:bo")).body.entries.length, 1, "the other customer's bank is untouched");
});

test("a token allowed only some swarms cannot open the memory pages", async () => {
  const page = await login(LIMITED);
  assert.match(await page.locator("main").textContent(), /memory banks need a token allowed every swarm/);
  assert.equal(await page.locator("#banks").count(), 0);
  await page.context().close();
});
