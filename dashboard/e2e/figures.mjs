// The dashboard's figures: time to first paint and to a fully rendered page
// for a run of 10,000 events and for the runs list over 100,000 runs, in
// Debian's Chromium driven by playwright-core. Fill a store first:
//
//   export FIG_DIR=$(mktemp -d) && mkdir -p $FIG_DIR/.swarm && cp dashboard/e2e/testdata/*.yaml $FIG_DIR/
//   go run ./dashboard/e2e/gen -store $FIG_DIR/.swarm/runs.db -runs 100000 -events 10000
//   go build -o $FIG_DIR/swarm ./cmd/swarm
//   cd dashboard/e2e && node figures.mjs
//
// Each page is loaded 5 times; the medians are printed.
import { spawn } from "node:child_process";
import { chromium } from "playwright-core";

const dir = process.env.FIG_DIR;
if (!dir) throw new Error("set FIG_DIR to the directory of the filled store (see the top of this file)");
const server = spawn(process.env.SWARM_BIN || dir + "/swarm", ["serve", "--addr", "127.0.0.1:0"], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
const base = await new Promise((resolve, reject) => {
  let buf = "";
  const t = setTimeout(() => reject(new Error("no server: " + buf)), 60_000);
  server.stderr.on("data", (d) => {
    buf += d;
    const m = buf.match(/listening on (http:\/\/[0-9.:]+)/);
    if (m) { clearTimeout(t); resolve(m[1]); }
  });
});
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

async function measure(name, path, ready) {
  const paint = [], done = [], counts = [];
  for (let i = 0; i < 5; i++) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(120_000);
    await page.goto(base + path, { waitUntil: "commit" });
    await page.waitForSelector(ready, { state: "attached" });
    const t = await page.evaluate(() => {
      const fcp = performance.getEntriesByName("first-contentful-paint")[0];
      return { fcp: fcp ? fcp.startTime : NaN, now: performance.now(), rows: document.querySelectorAll("#timeline li.ev, #rows tr").length };
    });
    paint.push(t.fcp); done.push(t.now); counts.push(t.rows);
    await page.close();
  }
  console.log(`${name}: first paint ${median(paint).toFixed(0)} ms, fully rendered ${median(done).toFixed(0)} ms (median of 5; ${counts[0]} rows)`);
}

try {
  await measure("run page, 10,000 events", "/ui/runs/big", "#run[data-loaded=true]");
  await measure("runs list, first page of 100,000 runs", "/ui/?scope=all", "#rows tr");
  await measure("runs list, top-level runs", "/ui/", "#rows tr");
  await measure("runs list, page after 99,000 newer runs", "/ui/?scope=all&after=run_0001000", "#rows tr");
} finally {
  await browser.close();
  server.kill("SIGTERM");
  await new Promise((r) => { server.on("exit", r); setTimeout(() => { server.kill("SIGKILL"); r(); }, 30_000); });
}
