// The dashboard's only script: it makes the runs list live and renders a
// run's timeline from its event stream (GET /v1/runs/{id}/events), which
// replays the journal and then follows the run. Everything it shows comes
// from that stream and the JSON API; the pages work without it, less live.
"use strict";

(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    // A scrolling block must be reachable with the keyboard.
    if (tag === "pre") e.tabIndex = 0;
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }

  function clip(s, n) {
    s = String(s == null ? "" : s);
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  function pretty(v) {
    if (v === undefined || v === null || v === "") return "";
    if (typeof v === "string") {
      try { return JSON.stringify(JSON.parse(v), null, 2); } catch (_) { return v; }
    }
    return JSON.stringify(v, null, 2);
  }

  function clock(t) {
    if (!t) return "";
    const d = new Date(t);
    return isNaN(d) ? "" : d.toISOString().slice(11, 23);
  }

  // ---- Live parts: the runs list's rows, and the team, conversations,
  // cluster and network pages, refreshed every few seconds. ----
  // An element with data-live is replaced by the page at that address (or,
  // when empty, by this page's ?fragment=live, the part alone), unless it
  // holds the focus or an open <details>: a form being filled in stays.
  function liveParts() {
    for (const part of document.querySelectorAll("[data-live]")) {
      let src = part.getAttribute("data-live");
      if (!src) {
        const q = new URLSearchParams(location.search);
        q.set("fragment", "live");
        src = location.pathname + "?" + q;
      }
      let busy = false;
      setInterval(async () => {
        if (busy || document.hidden || part.contains(document.activeElement) || part.querySelector("details[open]")) return;
        busy = true;
        try {
          const res = await fetch(src, { credentials: "same-origin", headers: { Accept: "text/html" } });
          if (res.ok) {
            const html = await res.text();
            if (html !== part.innerHTML && !part.contains(document.activeElement) && !part.querySelector("details[open]")) part.innerHTML = html;
          }
        } catch (_) { /* the next tick tries again */ }
        busy = false;
      }, 3000);
    }
  }

  // ---- The request inspector: what a model call was sent. ----
  // "Inspect request" on a model response opens, below it, the request the
  // provider received (GET /v1/runs/{id}/requests/{key}): the system
  // prompt, the messages, the tools, with token estimates per part.
  function requestInspector(timeline, api) {
    timeline.addEventListener("click", async (e) => {
      const b = e.target.closest("button.inspect");
      if (!b) return;
      const li = b.closest("li.ev");
      const open = li.querySelector(".inspect-box");
      if (open) {
        open.remove();
        b.setAttribute("aria-expanded", "false");
        return;
      }
      const key = b.dataset.key;
      const box = el("section", { class: "inspect-box", "aria-label": "Request of step " + key }, el("p", { class: "dim", text: "rebuilding the request…" }));
      li.append(box);
      b.setAttribute("aria-expanded", "true");
      try {
        const res = await fetch(api + "/requests/" + key.split("/").map(encodeURIComponent).join("/"), { credentials: "same-origin", headers: { Accept: "application/json" } });
        const body = await res.json();
        box.replaceChildren(...(res.ok ? requestView(body, timeline.closest("#run").dataset.run)
          : [el("p", { class: "reason-line", text: "Cannot rebuild the request: " + ((body.error && body.error.message) || res.status) })]));
      } catch (err) {
        box.replaceChildren(el("p", { class: "reason-line", text: "Cannot load the request: " + err }));
      }
    });
  }

  function requestView(q, run) {
    const t = q.tokens || {};
    const sum = (ns) => (ns || []).reduce((a, n) => a + n, 0);
    const tok = (n) => el("span", { class: "tok", text: "≈" + (n || 0) + " tokens" });
    const part = (cls, title, n, ...kids) => el("details", { class: cls, open: true }, el("summary", {}, title + " ", tok(n)), ...kids);
    const msgs = q.messages || [];
    const tools = q.tools || [];
    const view = [
      q.check === "differs" ? el("p", { class: "reason-line", text: "This is not exactly what was sent: the swarm's definition or a dynamic tool set changed since the call (the journal's digest of the request differs)." }) : null,
      el("p", { class: "inspect-total" }, el("strong", { text: "≈" + (t.total || 0) + " tokens" }),
        " estimated (" + (t.estimate || "chars/4") + ", no tokenizer)" + (t.reported ? "; the provider counted " + t.reported + " input tokens" : "") +
        (q.check === "verified" ? " · verified against the journal's digest of the request" : "")),
      el("p", { class: "inspect-how dim", text: "How it is estimated: a quarter of the characters of each text, and of the JSON of tool calls and tool schemas; " +
        "an image counts as its width × height / 750 tokens (at most 1,600, and 1,600 when its size is not known here); a file 1,500 tokens per 64 KB (a text file a quarter of its characters). " +
        "Providers count with their own tokenizers and price images their own way" + (t.reported ? ": the provider's " + t.reported + " is the real count, the estimate only shows where the tokens go." : ".") }),
      part("inspect-system", "System prompt", t.system, el("pre", { text: q.system || "(none)" })),
      part("inspect-messages", "Messages (" + msgs.length + ")", sum(t.messages), el("ol", {}, ...msgs.map((m, i) => el("li", {},
        el("span", { class: "role", text: m.role + (m.name ? " · " + m.name : "") + (m.is_error ? " · error" : "") }), " ", tok((t.messages || [])[i]),
        m.content ? el("pre", { text: m.content }) : null,
        m.parts && m.parts.length ? partsBox(m.parts, run) : null,
        m.tool_calls && m.tool_calls.length ? el("pre", { text: m.tool_calls.map((c) => c.name + " " + JSON.stringify(c.arguments === undefined ? {} : c.arguments)).join("\n") }) : null)))),
      part("inspect-tools", "Tools (" + tools.length + ")", sum(t.tools), el("ul", {}, ...tools.map((d, i) => el("li", {},
        el("code", { class: "tool-name", text: d.name }), " ", tok((t.tools || [])[i]),
        d.description ? el("p", { class: "dim", text: d.description }) : null,
        el("details", {}, el("summary", { text: "JSON schema" }), el("pre", { text: pretty(d.parameters) })))))),
    ];
    if (q.result_schema) view.push(el("details", { class: "inspect-schema" }, el("summary", { text: "Result schema" }), el("pre", { text: pretty(q.result_schema) })));
    return view.filter(Boolean);
  }

  // ---- Durations, from the journal's record times. ----
  // Every record carries the time it was appended (Event.Time); records
  // appended together share it. What each duration measures:
  // - a model call (model_response, model_error, compacted): from the
  //   latest earlier record of the same step scope (the run's own steps,
  //   or those of one inline handoff: the keys' prefix before t<n>/...)
  //   to the response record. The request is sent right after that
  //   record is written, so this is the wait for the model, a retry after
  //   a model_error counted from that error;
  // - a tool: from its tool_call record to its tool_result (call id);
  // - a handoff or child run: from handoff_started to handoff_returned;
  // - a turn: from the previous turn's end (or the scope's start) to
  //   turn_completed;
  // - the run: from its first record to its last.
  // A process that takes the run over from a dead one (the event's
  // takeover, on the first record it journals) starts nothing before its
  // takeover: from when the dead process was last seen to the takeover no
  // process drove the run, and that gap counts in no step's duration. A
  // step asked again (attempt 2) is two bars: the lost attempt, up to when
  // the dead process was last seen, and the new one, from the takeover.
  // A paused run does nothing until it is resumed: no model call after a
  // resumed record starts before it.
  // A call not yet answered runs up to the newest record. A fork's reused
  // records keep their origin's times: their rows show the origin's
  // durations, the chart leaves them out, and the fork's own steps count
  // from its start, a tool or handoff begun in the origin and ended in the
  // fork too.
  const stepScope = (key) => {
    const m = /(^|\/)[a-z]\d+\/(?![a-z]\d+(\/|$))[^/]+(\/[^/]*)?$/.exec(key || "");
    return m ? key.slice(0, m.index) + m[1] : "";
  };

  function fmtDur(ms) {
    if (!(ms >= 0)) return "";
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
    const m = Math.floor(ms / 60000);
    return m + " min " + Math.round((ms - m * 60000) / 1000) + " s";
  }

  const stepKinds = { model: "model call", tool: "tool", handoff: "handoff", child: "child run", turn: "turn", dead: "no process" };

  // takeoverText says who took a run over from whom, and what was lost.
  function takeoverText(tk) {
    const dead = Date.parse(tk.at) - Date.parse(tk.last_seen);
    return "Taken over by " + tk.node + " from " + tk.from + ", whose lease ran out at " + clock(tk.lease_until) +
      (dead >= 0 ? ": no process drove the run for " + fmtDur(dead) + " (" + tk.from + " last seen at " + clock(tk.last_seen) + ")" : "") +
      (tk.redo && tk.redo.length ? ". Asked again: " + tk.redo.join(", ") : "") + ".";
  }

  function newTiming() {
    let first = null; // time of the first record, ms
    let last = null; // time of the newest record
    const scopeLast = new Map(); // step scope -> time of its latest record
    const turnStart = new Map(); // step scope -> start of its current turn
    const open = new Map(); // call id -> its step, until its result
    const bySeq = new Map(); // seq of the record that ends a step -> step
    const steps = []; // model calls, tools and handoffs, in the order they began
    const gaps = []; // [from, to] of each time no process drove the run
    let floor = -Infinity; // the newest takeover: nothing after it starts earlier
    let resumedAt = -Infinity; // the newest resume: the same
    let reused = 0;
    // dead is the time of [a, b] that no process drove the run.
    const dead = (a, b) => gaps.reduce((sum, [g0, g1]) => sum + Math.max(0, Math.min(b, g1) - Math.max(a, g0)), 0);
    // lost adds the attempt of step s that died with its process.
    const lost = (s, start) => {
      const g = gaps[gaps.length - 1];
      if (g && start < g[0]) steps.push({ ...s, start, end: g[0], attempt: 1, lost: true, endSeq: undefined });
    };

    function add(ev) {
      const t = Date.parse(ev.time);
      if (isNaN(t)) return;
      if (first === null) first = t;
      if (ev.type === "started" && ev.reused) reused = ev.reused;
      const isReused = ev.seq > 1 && ev.seq <= reused + 1;
      const prev = last === null ? t : last;
      last = Math.max(prev, t);
      const scope = stepScope(ev.key);
      const depth = (scope.match(/(^|\/)h\//g) || []).length;
      // A scope first seen (a conversation's message, say) starts at the
      // record before it.
      if (!scopeLast.has(scope)) scopeLast.set(scope, prev);
      if (!turnStart.has(scope)) turnStart.set(scope, prev);
      const tk = ev.takeover;
      let gapStep = null; // drawn after the attempt it cut short
      if (tk) {
        const at = Date.parse(tk.at);
        const seen = Math.min(Date.parse(tk.last_seen) || prev, at);
        if (!isNaN(at)) {
          gaps.push([seen, at]);
          floor = Math.max(floor, at);
          if (!isReused) gapStep = { kind: "dead", agent: "", name: tk.from + " died; " + tk.node + " took over", start: seen, end: at, seq: ev.seq, depth: 0 };
        }
      }
      const before = Math.max(scopeLast.get(scope), isReused ? -Infinity : first, ev.type === "resumed" ? -Infinity : resumedAt);
      const since = Math.max(before, floor);
      if (ev.type === "resumed" && !isReused) resumedAt = t;
      let step = null;
      switch (ev.type) {
        case "model_response": case "model_error": case "compacted":
          step = { kind: "model", agent: ev.agent, name: ev.type === "model_error" ? "model error" : ev.type === "compacted" ? "compaction" : "model call", start: since, end: t, seq: ev.seq, depth, err: ev.type === "model_error" };
          if (ev.attempt > 1) {
            step.attempt = ev.attempt;
            if (!isReused) lost(step, before);
          }
          if (gapStep) steps.push(gapStep);
          gapStep = null;
          if (!isReused) steps.push(step);
          break;
        case "tool_call": case "handoff_started": {
          const s = { kind: ev.type === "tool_call" ? "tool" : ev.child ? "child" : "handoff", agent: ev.agent, name: ev.type === "tool_call" ? ev.tool : "→ " + ev.target, start: t, end: null, seq: ev.seq, depth, child: ev.child, reused: isReused };
          if (ev.call_id) open.set(ev.call_id, s);
          if (!isReused) steps.push(s);
          if (ev.type === "handoff_started" && ev.call_id) {
            // The handoff's own steps have keys under <turn>/h/<call id>/.
            const inner = String(ev.key || "").replace(/\/call\/[^/]+$/, "/h/" + ev.call_id + "/");
            scopeLast.set(inner, t);
            turnStart.set(inner, t);
          }
          break;
        }
        case "tool_result": case "handoff_returned": {
          const s = open.get(ev.call_id);
          if (s) {
            open.delete(ev.call_id);
            if (ev.attempt > 1) {
              // Run again by the process that took over.
              s.attempt = ev.attempt;
              if (!isReused) lost(s, s.start);
              s.start = Math.max(s.start, floor);
            }
            if (s.reused && !isReused) {
              // Begun in the origin, ended in the fork: the fork's part.
              s.start = Math.max(s.start, first);
              s.reused = false;
              steps.push(s);
            }
            s.end = t;
            s.endSeq = ev.seq;
            s.err = !!ev.is_error;
            step = s;
          }
          break;
        }
        case "turn_completed":
          step = { kind: "turn", start: Math.max(turnStart.get(scope), isReused ? -Infinity : first), end: t };
          turnStart.set(scope, t);
          break;
      }
      if (gapStep) steps.push(gapStep);
      if (step) bySeq.set(ev.seq, step);
      scopeLast.set(scope, t);
    }

    // took is the time step s took, without the time no process drove the
    // run.
    const took = (s) => (s.end === null ? null : s.end - s.start - (s.kind === "dead" ? 0 : dead(s.start, s.end)));

    // durHTML is the duration shown on the row of the record that ends a step.
    function durHTML(ev, esc) {
      const s = bySeq.get(ev.seq);
      if (!s || s.end === null) return "";
      const d = took(s);
      const gap = s.end - s.start - d;
      const title = stepKinds[s.kind] + (s.attempt ? " (attempt " + s.attempt + ")" : "") + " took " + fmtDur(d) + (gap > 0 ? ", not counting " + fmtDur(gap) + " when no process drove the run" : "");
      return '<span class="dur" data-ms="' + d + '" title="' + esc(title) + '">' + esc(fmtDur(d)) + "</span>";
    }

    // byAgent sums the time each agent spent in model calls, tools and
    // handoffs (parallel calls each count in full).
    function byAgent() {
      const out = new Map();
      for (const s of steps) {
        if (s.end === null || s.kind === "dead" || s.lost) continue;
        const kind = s.kind === "child" ? "handoff" : s.kind;
        const a = out.get(s.agent || "") || { model: [0, 0], tool: [0, 0], handoff: [0, 0] };
        a[kind][0]++;
        a[kind][1] += took(s);
        out.set(s.agent || "", a);
      }
      return out;
    }

    return { add, durHTML, byAgent, steps, gaps, took, span: () => (first === null ? null : [first, last]) };
  }

  // ---- Long lists: only the rows near the viewport are in the page. ----
  // A list of n rows is cut into blocks of `per` rows, each an element of
  // its own (an <ol> of the timeline, say). A block near the viewport
  // (within `margin` pixels, as an IntersectionObserver sees it) holds its
  // rows; the others are empty boxes as high as their rows were when last
  // shown, or as the average row times their count. A run of 100,000
  // events keeps a few hundred rows in the DOM, and every row is reached
  // by scrolling as in a plain list (the browser's scroll anchoring keeps
  // the rows in view still when a block above them changes height).
  // opts: html(i) is row i's HTML; after(el) runs on a block just filled;
  // keep(el) keeps a block's rows while it returns true (an open
  // inspector, say).
  function newVList(box, opts) {
    const per = opts.per || 50;
    const margin = opts.margin || 1500;
    let blocks = [];
    let n = 0;
    let measuredH = 0;
    let measuredRows = 0;
    const avg = () => (measuredRows ? measuredH / measuredRows : opts.estimate || 34);
    const io = new IntersectionObserver((entries) => {
      for (const e of entries) {
        const b = e.target.vblock;
        if (!b) continue;
        if (e.isIntersecting) show(b);
        else hide(b);
      }
    }, { rootMargin: margin + "px 0px" });

    function rows(from, to) {
      const parts = new Array(to - from);
      for (let i = from; i < to; i++) parts[i - from] = opts.html(i);
      return parts.join("");
    }
    function estimate(b) {
      b.el.style.height = Math.round((b.end - b.start) * avg()) + "px";
    }
    function show(b) {
      if (b.on) return;
      b.on = true;
      b.el.style.height = "";
      b.el.innerHTML = rows(b.start, b.end);
      if (opts.after) opts.after(b.el);
      measuredH += b.el.offsetHeight;
      measuredRows += b.end - b.start;
    }
    function hide(b) {
      // A hidden list (another tab) reports nothing in view: keep it.
      if (!b.on || !box.offsetParent || b.el.contains(document.activeElement) || (opts.keep && opts.keep(b.el))) return;
      const h = b.el.offsetHeight;
      b.on = false;
      b.el.textContent = "";
      b.el.style.height = h + "px";
    }
    function addBlock(start) {
      const el = document.createElement(opts.tag || "div");
      if (opts.cls) el.className = opts.cls;
      const b = { el, start, end: start, on: false };
      el.vblock = b;
      blocks.push(b);
      return b;
    }
    // grow adds rows up to m (the list's rows so far are unchanged).
    function grow(m) {
      if (m <= n) return;
      const fresh = document.createDocumentFragment();
      let b = blocks[blocks.length - 1];
      while (n < m) {
        if (!b || b.end - b.start >= per) {
          b = addBlock(n);
          fresh.append(b.el);
        }
        const k = Math.min(m, b.start + per);
        if (b.on) {
          b.el.insertAdjacentHTML("beforeend", rows(n, k));
          if (opts.after) opts.after(b.el);
        }
        b.end = k;
        n = k;
        if (!b.on) estimate(b);
      }
      if (fresh.childNodes.length) {
        const added = [...fresh.childNodes];
        box.append(fresh);
        for (const el of added) io.observe(el);
        // Blocks in view are filled now rather than at the observer's
        // next report: the rows are there when the caller returns.
        if (box.offsetParent) {
          for (const el of added) {
            if (el.getBoundingClientRect().top > window.innerHeight + margin) break;
            show(el.vblock);
          }
        }
      }
    }
    // reset lays the list out anew with m rows (after a filter, say).
    function reset(m) {
      io.disconnect();
      box.textContent = "";
      blocks = [];
      n = 0;
      grow(m);
    }
    // row returns the element of row i, filling its block if need be.
    function row(i) {
      const b = blocks[Math.floor(i / per)];
      if (!b || i >= b.end) return null;
      show(b);
      return b.el.children[i - b.start] || null;
    }
    return { grow, reset, row, size: () => n };
  }

  // Binary search: the index of the first of items (sorted by seq) whose
  // seq is at least seq.
  function seqIndex(items, seq) {
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (items[mid].seq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // newGantt draws the steps of timing as bars on a time axis: one row per
  // step, indented by handoff depth, each bar a button that shows its
  // event. Plain HTML: the page has no chart library. The rows are a
  // virtual list, so a run of any length draws only those in view.
  function newGantt(box, timing, esc) {
    box.innerHTML = '<div class="g-head"></div><div class="g-rows"></div>';
    const head = box.firstElementChild;
    let t0 = 0;
    let t1 = 0;
    let total = 1;
    const pct = (t) => ((t - t0) / total) * 100;
    const place = (root) => {
      // The page's CSP refuses style attributes: positions are set here.
      for (const e of root.querySelectorAll("[data-x]")) {
        e.style.left = e.dataset.x + "%";
        if (e.dataset.w) e.style.width = e.dataset.w + "%";
      }
      for (const e of root.querySelectorAll("[data-pad]")) e.style.paddingLeft = e.dataset.pad + "px";
    };
    const list = newVList(box.lastElementChild, { tag: "ol", cls: "g-block", per: 100, estimate: 20, after: place, html: (i) => {
      const s = timing.steps[i];
      const end = s.end === null ? t1 : s.end;
      const d = s.end === null ? end - s.start : timing.took(s);
      const attempt = s.attempt ? (s.lost ? ", attempt " + s.attempt + ", lost with its process" : ", attempt " + s.attempt) : "";
      const label = s.kind === "dead" ? "no process · " + s.name
        : (s.agent || "") + " · " + stepKinds[s.kind] + (s.kind === "model" ? (s.name !== "model call" ? " (" + s.name + ")" : "") : " " + s.name) + (attempt ? " (" + attempt.slice(2) + ")" : "");
      const left = pct(s.start);
      const width = Math.max(pct(end) - left, 0.3);
      // The times no process drove the run, across every row.
      const gaps = timing.gaps.map(([g0, g1]) => '<span class="g-gap" data-x="' + pct(g0).toFixed(3) + '" data-w="' + Math.max(pct(g1) - pct(g0), 0.3).toFixed(3) + '"></span>').join("");
      return '<li class="g-row g-' + s.kind + (s.err ? " g-err" : "") + (s.lost ? " g-lost" : "") + (s.end === null ? " g-pending" : "") + '" data-depth="' + s.depth + '"' + (s.attempt ? ' data-attempt="' + s.attempt + '"' : "") + ">" +
        '<span class="g-label" data-pad="' + (s.depth * 14 + 4) + '" title="' + esc(label) + '">' + esc(label) + "</span>" +
        '<span class="g-dur">' + esc(s.end === null ? "running" : fmtDur(d)) + "</span>" +
        '<span class="g-track">' + gaps + '<button type="button" class="g-bar" data-seq="' + (s.endSeq || s.seq) + '" data-x="' + left.toFixed(3) + '" data-w="' + Math.min(width, 100 - left).toFixed(3) + '" data-ms="' + d + '" aria-label="' +
        esc(label + ", " + (s.end === null ? "still running" : fmtDur(d)) + ", at " + fmtDur(s.start - t0) + ": show event " + (s.endSeq || s.seq)) + '"></button></span></li>';
    } });

    // draw lays the chart out again for the steps so far.
    function draw() {
      const span = timing.span();
      if (!span || !timing.steps.length) {
        head.innerHTML = '<p class="dim">No model calls, tools or handoffs yet.</p>';
        list.reset(0);
        return;
      }
      [t0, t1] = span;
      total = Math.max(t1 - t0, 1);
      // Ticks at a round step: 1, 2 or 5 times a power of ten, about 6 of them.
      const raw = total / 6;
      const p10 = Math.pow(10, Math.floor(Math.log10(raw)));
      const stepMs = Math.max(1, [1, 2, 5, 10].map((f) => f * p10).find((s) => s >= raw));
      let ticks = "";
      for (let t = 0; t <= total; t += stepMs) ticks += '<span class="g-tick" data-x="' + pct(t0 + t).toFixed(3) + '">' + esc(fmtDur(t)) + "</span>";
      let totals = "";
      for (const [agent, a] of timing.byAgent()) {
        const cell = (k) => '<td class="num">' + (a[k][0] ? a[k][0] + " · " + esc(fmtDur(a[k][1])) : "") + "</td>";
        totals += "<tr><th scope=\"row\">" + esc(agent) + "</th>" + cell("model") + cell("tool") + cell("handoff") + "</tr>";
      }
      const idle = timing.gaps.reduce((sum, [g0, g1]) => sum + g1 - g0, 0);
      head.innerHTML = '<p class="g-sum">The run took <strong id="run-duration">' + esc(fmtDur(t1 - t0)) + "</strong> from its first record to its newest, in <strong class=\"g-steps\">" + timing.steps.filter((s) => s.kind !== "dead" && !s.lost).length + "</strong> steps" +
        (idle > 0 ? '; <strong class="g-idle">' + esc(fmtDur(idle)) + "</strong> of it no process drove the run (hatched: a process died and another took over)" : "") + ".</p>" +
        '<table class="usage g-agents"><caption class="sr">Time per agent</caption><thead><tr><th scope="col">Agent</th><th scope="col" class="num">Model calls</th><th scope="col" class="num">Tools</th><th scope="col" class="num">Handoffs</th></tr></thead><tbody>' + totals + "</tbody></table>" +
        '<p class="dim g-note">Counts and time spent, parallel calls each in full. A bar shows its event.</p>' +
        '<div class="g-row g-axis" aria-hidden="true"><span></span><span></span><span class="g-track">' + ticks + "</span></div>";
      place(head);
      list.reset(timing.steps.length);
    }
    return { draw };
  }

  // ---- Filters of a run's timeline: event type, agent, and text in the
  // events' inputs, outputs, texts and reasons. They pick the events the
  // timeline lists; changed, they call onChange. ----
  function newFilters(onChange) {
    const type = $("#ev-type");
    const agent = $("#ev-agent");
    const find = $("#ev-find");
    const seen = { type: new Set(), agent: new Set() };
    const hay = new Map(); // seq -> the event's searchable text, lower case
    const str = (v) => (v === undefined || v === null ? "" : typeof v === "string" ? v : JSON.stringify(v));

    function haystack(ev) {
      let h = hay.get(ev.seq);
      if (h === undefined) {
        h = [ev.input, ev.output, ev.text, ev.reason, ev.request, ev.message, ev.context, ev.result, ev.arguments, ev.tool_calls, ev.tool, ev.target, ev.mail, ev.mails, ev.task]
          .map(str).join("\n").toLowerCase();
        hay.set(ev.seq, h);
      }
      return h;
    }

    // ?find=... on the page's address fills the search (a workflow node's
    // "events" link: key:<node key>).
    const asked = new URLSearchParams(location.search).get("find");
    if (asked) find.value = asked;
    const active = () => !!(type.value || agent.value || find.value.trim());
    // nodeKey reads a step key as a workflow node's: without its round,
    // visit and index segments and its retry attempts.
    const nodeKey = (k) => (k || "").split("/").filter((s) => !/^\d+$/.test(s)).map((s) => s.replace(/~\d+$/, "")).join("/").toLowerCase();
    function matches(ev) {
      const q = find.value.trim().toLowerCase();
      if (q.startsWith("key:")) {
        const k = nodeKey(ev.key), want = q.slice(4);
        if (k !== want && !k.startsWith(want + "/")) return false;
      } else if (q && !haystack(ev).includes(q)) return false;
      return (!type.value || ev.type === type.value) && (!agent.value || (ev.agent || "") === agent.value);
    }

    function addOption(sel, set, v) {
      if (!v || set.has(v)) return;
      set.add(v);
      sel.append(el("option", { value: v, text: v }));
    }

    // note offers an event's type and agent in the selects.
    function note(ev) {
      addOption(type, seen.type, ev.type);
      addOption(agent, seen.agent, ev.agent);
    }

    let timer = null;
    type.addEventListener("change", onChange);
    agent.addEventListener("change", onChange);
    find.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(onChange, 150); });

    function clear() {
      type.value = agent.value = find.value = "";
      onChange();
    }
    return { note, active, matches, clear };
  }

  // ---- A run's page. ----
  const terminal = new Set(["completed", "failed", "stopped"]);

  // esc escapes text for HTML (rows are built as HTML text: see rowHTML).
  const esc = (v) => String(v == null ? "" : v).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

  // ---- Parts: the images, files and audio of a run's input and of its
  // tools' results (ev.parts). A large part refers to a file of the run
  // (blob: its SHA-256), served by /ui/runs/{id}/blobs/{hash}; a small one
  // holds its bytes (data, base64). A PNG, JPEG, GIF or WebP image is shown
  // as a thumbnail (its bytes' first bytes checked here for a small one,
  // by the server for a file); anything else, an SVG or a PDF or audio, is
  // a download link with its name, type and size. A part at a URL is a
  // link the page never loads: looking at a run calls no third party. ----
  const shownImages = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

  function fmtBytes(n) {
    if (!(n >= 0)) return "";
    if (n < 1024) return n + " B";
    if (n < 1048576) return (n / 1024).toFixed(n < 10240 ? 1 : 0) + " KB";
    return (n / 1048576).toFixed(1) + " MB";
  }

  // sniffImage returns the image type of base64 bytes, by their first
  // bytes, or "".
  function sniffImage(b64) {
    let head;
    try { head = atob(b64.slice(0, 24)); } catch (_) { return ""; }
    if (head.startsWith("\x89PNG\r\n\x1a\n")) return "image/png";
    if (head.startsWith("\xff\xd8\xff")) return "image/jpeg";
    if (head.startsWith("GIF87a") || head.startsWith("GIF89a")) return "image/gif";
    if (head.startsWith("RIFF") && head.slice(8, 12) === "WEBP") return "image/webp";
    return "";
  }

  function partHTML(p, run) {
    if (!p || typeof p !== "object") return "";
    if (p.type === "text") return '<p class="part part-text">' + esc(clip(p.text, 2000)) + "</p>";
    let mt = String(p.media_type || "").split(";")[0].trim().toLowerCase();
    let data = typeof p.data === "string" ? p.data : "";
    let url = typeof p.url === "string" ? p.url : "";
    // A data: URL is bytes, not a place.
    const du = /^data:([^;,]*)((?:;[^;,]*)*),/i.exec(url);
    if (!data && du) {
      if (/;base64/i.test(du[2])) {
        data = url.slice(du[0].length);
        mt = mt || du[1].toLowerCase();
      }
      url = "";
    }
    if (data && !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) data = "";
    const name = String(p.name || "");
    let size = p.size;
    let src = "";
    let img = false;
    let inline = false;
    if (/^[0-9a-f]{64}$/.test(p.blob || "")) {
      src = "/ui/runs/" + encodeURIComponent(run) + "/blobs/" + p.blob + (name ? "?name=" + encodeURIComponent(name) : "");
      img = shownImages.has(mt);
    } else if (data) {
      size = Math.floor(data.length / 4) * 3 - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
      const sniffed = sniffImage(data);
      img = shownImages.has(sniffed);
      inline = true;
      src = "data:" + (img ? sniffed : "application/octet-stream") + ";base64," + data;
    }
    const kind = p.type || "file";
    const label = name || kind;
    const meta = [mt, fmtBytes(size)].filter(Boolean).join(" · ");
    const metaHTML = meta ? ' <span class="meta">' + esc(meta) + "</span>" : "";
    if (img) {
      const pic = '<img src="' + esc(src) + '" alt="' + esc(kind + " " + label + (meta ? ", " + meta : "")) + '" loading="lazy" decoding="async">';
      // A small image is shown whole; a file's opens at full size.
      return '<figure class="part part-image">' + (inline ? pic : '<a href="' + esc(src) + '" target="_blank" rel="noopener" title="Open at full size">' + pic + "</a>") +
        "<figcaption>" + esc(label) + metaHTML + "</figcaption></figure>";
    }
    if (src) {
      const file = name || (kind + (mt ? "." + (mt.split("/")[1] || "bin").replace(/[^a-z0-9]/g, "") : ""));
      return '<span class="part part-file"><a href="' + esc(src) + '" download="' + esc(file) + '">Download ' + esc(label) + "</a>" + metaHTML + "</span>";
    }
    if (/^https?:\/\//i.test(url)) {
      return '<span class="part part-url"><a href="' + esc(url) + '" target="_blank" rel="noopener noreferrer nofollow">' + esc(kind + " at " + clip(url, 120)) + "</a>" +
        ' <span class="meta">' + esc((mt ? mt + " · " : "") + "not loaded here") + "</span></span>";
    }
    return '<span class="part part-none">' + esc(label) + (url ? ' <code>' + esc(clip(url, 120)) + "</code>" : "") + metaHTML + "</span>";
  }

  // partsHTML shows an event's parts, or nothing.
  function partsHTML(parts, run) {
    if (!Array.isArray(parts) || !parts.length) return "";
    return '<div class="parts">' + parts.map((p) => partHTML(p, run)).join("") + "</div>";
  }

  // partsBox is an element showing parts (see partHTML).
  function partsBox(parts, run) {
    const box = el("div", { class: "inspect-parts" });
    box.innerHTML = partsHTML(parts, run);
    return box;
  }

  // ago is how long ago t was, as the pages say it ("5s", "3m", "2h").
  function ago(t) {
    const s = Math.max(0, Math.floor((Date.now() - Date.parse(t)) / 1000));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m";
    if (s < 172800) return Math.floor(s / 3600) + "h";
    return Math.floor(s / 86400) + "d";
  }

  // Times said as "… ago" (time.ago) count on while the page is open.
  function liveAgo() {
    setInterval(() => {
      for (const t of document.querySelectorAll("time.ago")) t.textContent = ago(t.getAttribute("datetime"));
    }, 1000);
  }

  function runPage() {
    const root = $("#run");
    if (!root) return;
    const id = root.getAttribute("data-run");
    const api = "/v1/runs/" + encodeURIComponent(id);
    const initialLast = Number(root.dataset.lastSeq || 0);
    const timeline = $("#timeline");
    const count = $("#count");
    const streamState = $("#stream-state");
    const live = $("#live");
    const follow = $("#follow");
    // A finished run's page opens at its top: there is nothing to follow.
    if (terminal.has(root.dataset.state)) follow.checked = false;
    const events = []; // journal events in order (no deltas)
    const bySeq = new Map();
    const liveText = new Map(); // agent -> text streamed so far
    let reused = 0;
    let lastSeq = 0;
    let queue = [];
    let scheduled = false;
    let done = false;
    const timing = newTiming();
    // The timeline lists view: every event, or those the filters pick.
    let view = events;
    let picked = 0; // the seq of the event a Gantt bar showed
    const openRaw = new Set(); // seqs of the events whose JSON is shown
    const cards = new Map(); // call id -> its card, while on the page
    const rowsList = newVList(timeline, {
      tag: "ol", cls: "v-block", per: 50,
      html: (i) => rowHTML(view[i]),
      after: (blk) => { for (const c of blk.querySelectorAll(".call[data-call]")) cards.set(c.dataset.call, c); },
      keep: (blk) => !!blk.querySelector(".inspect-box"),
    });
    const shown = $("#ev-shown");
    const filters = newFilters(() => {
      view = filters.active() ? events.filter(filters.matches) : events;
      shown.textContent = filters.active() ? view.length + " shown" : "";
      timeline.classList.toggle("filtered", filters.active());
      rowsList.reset(view.length);
    });
    // A filter from the address (?find=) picks from the first events on.
    if (filters.active()) {
      view = [];
      timeline.classList.add("filtered");
    }

    $("#show-keys").addEventListener("change", (e) => timeline.classList.toggle("keys", e.target.checked));

    // Tabs: arrow keys move between them, as the ARIA pattern says.
    const tabs = [$("#tab-timeline"), $("#tab-gantt"), $("#tab-transcript"), $("#tab-nodes")].filter(Boolean);
    function select(tab) {
      for (const t of tabs) {
        const on = t === tab;
        t.setAttribute("aria-selected", on ? "true" : "false");
        t.tabIndex = on ? 0 : -1;
        $("#" + t.getAttribute("aria-controls")).hidden = !on;
      }
      if (tab.id === "tab-transcript") transcriptLater(0);
      if (tab.id === "tab-gantt") ganttLater(0);
    }
    tabs.forEach((t, i) => {
      t.addEventListener("click", () => select(t));
      t.addEventListener("keydown", (e) => {
        if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
          const next = tabs[(i + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
          select(next);
          next.focus();
        }
      });
    });

    // The Gantt view is drawn when shown, and again as events come.
    let ganttTimer = null;
    let gantt = null;
    const ganttPanel = $("#panel-gantt");
    function ganttLater(ms) {
      if (ganttTimer || ganttPanel.hidden) return;
      ganttTimer = setTimeout(() => {
        ganttTimer = null;
        gantt = gantt || newGantt($("#gantt"), timing, esc);
        gantt.draw();
      }, ms);
    }
    // A bar shows its event in the timeline.
    $("#gantt").addEventListener("click", (e) => {
      const bar = e.target.closest("button.g-bar");
      const ev = bar && bySeq.get(Number(bar.dataset.seq));
      if (!ev) return;
      select(tabs[0]);
      if (filters.active() && !filters.matches(ev)) filters.clear();
      picked = ev.seq;
      for (const old of timeline.querySelectorAll("li.picked")) old.classList.remove("picked");
      const li = rowsList.row(seqIndex(view, ev.seq));
      if (!li) return;
      li.classList.add("picked");
      li.tabIndex = -1;
      li.scrollIntoView({ block: "center" });
      li.focus({ preventScroll: true });
    });

    // Changing the offered value is asking for the edit.
    $("#fork-edit-output")?.addEventListener("input", () => { $("#fork-edit-on").checked = true; });

    // Fork here: fill the fork form with the step and bring it into view.
    timeline.addEventListener("click", (e) => {
      const b = e.target.closest("button");
      if (!b) return;
      const li = b.closest("li.ev");
      const ev = li && bySeq.get(Number(li.dataset.seq));
      if (!ev) return;
      if (b.classList.contains("fork-here")) {
        const at = $("#fork-at");
        if (!at) return;
        at.value = ev.key;
        // A tool result, model response or answer can be edited in the
        // fork (ForkEdit): the form offers its recorded value to change.
        const field = { tool_result: "output", handoff_returned: "output", model_response: "text", resumed: "message" }[ev.type];
        $("#fork-edit").hidden = !field;
        $("#fork-edit-key").value = field ? ev.key : "";
        $("#fork-edit-step").textContent = ev.key;
        $("#fork-edit-output").value = field ? ev[field] || "" : "";
        $("#fork-edit-on").checked = false;
        $("#fork").scrollIntoView({ block: "center" });
        at.focus();
      } else if (b.classList.contains("json")) {
        let pre = li.querySelector("pre.raw");
        if (pre) {
          pre.remove();
          openRaw.delete(ev.seq);
          b.setAttribute("aria-expanded", "false");
        } else {
          li.append(el("pre", { class: "raw", text: JSON.stringify(ev, null, 2) }));
          openRaw.add(ev.seq);
          b.setAttribute("aria-expanded", "true");
        }
      }
    });

    requestInspector(timeline, api);

    function summary(ev) {
      switch (ev.type) {
        case "started":
          return ev.fork_of ? "forked from " + ev.fork_of + (ev.fork_at ? " at " + ev.fork_at : "") + ", reusing " + (ev.reused || 0) + " records"
            : ev.input === undefined || ev.input === null ? "no input" + (convo ? ": the conversation waits for a message" : "")
            : "input " + clip(JSON.stringify(ev.input), 200);
        case "model_response": {
          const parts = [];
          if (ev.text) parts.push(clip(ev.text, 400));
          if (ev.tool_calls && ev.tool_calls.length) parts.push(ev.tool_calls.length + " tool call" + (ev.tool_calls.length > 1 ? "s" : ""));
          if (ev.usage) parts.push((ev.usage.input_tokens || 0) + "+" + (ev.usage.output_tokens || 0) + " tokens");
          return parts.join(" · ");
        }
        case "model_error": return (ev.kind ? ev.kind + ": " : "") + clip(ev.reason, 300);
        case "tool_call": return ev.tool + " " + clip(JSON.stringify(ev.arguments || {}), 200);
        case "tool_result": return ev.tool + (ev.is_error ? " failed: " : " → ") + clip(ev.output, 300);
        case "handoff_started": return "→ " + ev.target + (ev.request ? ": " + clip(ev.request, 200) : "");
        case "handoff_returned": return "← " + ev.target + (ev.is_error ? " failed: " : ": ") + clip(ev.output, 300);
        case "turn_completed": return "turn " + ev.turn + (ev.max_turns ? " of " + ev.max_turns : "");
        case "paused": return clip(ev.reason, 300) + (ev.context ? " — " + clip(ev.context, 200) : "");
        case "resumed": return (userMsgs.has(ev.seq) ? "user: " : "answer: ") + clip(ev.message, 300);
        case "completed": return "result " + clip(JSON.stringify(ev.result), 300);
        case "failed": case "stopped": return clip(ev.reason, 300);
        case "reply": return ev.is_error ? "no answer: " + clip(ev.reason, 300) : clip(ev.text, 400);
        case "member": return (ev.agent || "") + " is " + ev.state + (ev.message ? ": " + clip(ev.message, 200) : "");
        case "mail": {
          const m = ev.mail || {};
          return (ev.target === "*" ? "to everyone" : "to " + ev.target) + (m.type && m.type !== "message" ? " [" + m.type + "]" : "") + ": " + clip(m.content, 300);
        }
        case "inbox": {
          const ms = ev.mails || [];
          return clip(ms.length + " mail" + (ms.length === 1 ? "" : "s") + " read: " + ms.map((m) => m.from + ": " + m.content).join(" · "), 300);
        }
        case "task": {
          const t = ev.task || {};
          return "task #" + t.id + " " + clip(t.subject, 200) + ": " + t.status + (t.owner ? " (" + t.owner + ")" : "") + (t.result ? " → " + clip(t.result, 200) : "");
        }
        case "protocol": {
          const p = ev.protocol || {};
          return p.kind + " " + p.from + " → " + p.to + ": " + p.state + (p.response || p.content ? " — " + clip(p.response || p.content, 200) : "");
        }
        default: return clip(ev.text || ev.reason || ev.output || "", 300);
      }
    }

    // Rows are built as HTML text, a block at a time, and inserted with one
    // innerHTML: several times faster than creating each node. Every value
    // is escaped.
    const forkable = !!$("#fork-at");
    const results = new Map(); // call id -> its result event (or what stands for it)
    const calls = new Set(); // the ids of every tool call so far
    const waiting = new Map(); // call id -> the paused event of a call waiting for an answer
    let lastPause = null; // the newest paused event: the one a resumed event answers
    // A conversation pauses for each user message: its resumed events are
    // the user's messages (userMsgs, by seq), and it counts messages where
    // other runs count turns.
    let convo = false;
    let waitsForUser = false;
    const userMsgs = new Set();

    // A result's label is "output" or "error", or says what stands for
    // it: the answer to a pause, or no result at all once the run ended.
    function outHTML(ev) {
      return '<strong>' + esc(ev.label || (ev.is_error ? "error" : "output")) + '</strong><pre tabindex="0">' + esc(clip(ev.output, 4000)) + "</pre>" +
        (ev.child ? '<a href="/ui/runs/' + esc(encodeURIComponent(ev.child)) + '">child run ' + esc(ev.child) + "</a>" : "") + partsHTML(ev.parts, id);
    }

    function cardHTML(c) {
      const r = results.get(c.id);
      return '<div class="call' + (r ? (r.is_error ? " err" : "") : " pending") + '" data-call="' + esc(c.id) + '"><div class="name">' + esc(c.name) +
        '</div><pre tabindex="0">' + esc(pretty(c.arguments)) + "</pre>" +
        (r ? '<div class="out">' + outHTML(r) + "</div>" : '<div class="out dim">' + pendingText(c.id) + "</div>") + "</div>";
    }

    function pendingText(callID) {
      return waiting.has(callID) ? "waiting for an answer…" : "waiting for the result…";
    }

    // card returns the card of a call if it is on the page.
    function card(callID) {
      const c = cards.get(callID);
      if (c && !c.isConnected) cards.delete(callID);
      return c && c.isConnected ? c : null;
    }

    // settle shows a result in a card on the page (a card drawn later
    // shows it from results).
    function settle(ev) {
      const c = card(ev.call_id);
      if (!c || !c.classList.contains("pending")) return;
      c.classList.remove("pending");
      c.classList.toggle("err", !!ev.is_error);
      const out = c.querySelector(".out");
      out.className = "out";
      out.innerHTML = outHTML(ev);
    }

    function rowHTML(ev) {
      const isReused = ev.seq > 1 && ev.seq <= reused + 1;
      const raw = openRaw.has(ev.seq);
      let h = '<li class="ev ev-' + esc(ev.type) + (ev.is_error ? " err" : "") + (isReused ? " reused" : "") + (ev.takeover ? " taken-over" : "") + (ev.seq === picked ? " picked" : "") + '" data-seq="' + ev.seq + '">' +
        (ev.takeover ? '<p class="takeover" role="note"><strong>Takeover.</strong> ' + esc(takeoverText(ev.takeover)) + "</p>" : "") +
        '<div class="ev-head"><span class="seq">#' + ev.seq + '</span><time datetime="' + esc(ev.time) + '">' + esc(clock(ev.time)) +
        '</time><span class="agent">' + esc(ev.agent) + '</span><span class="type">' + esc(ev.type) + "</span>" +
        (isReused ? '<span class="badge">reused</span>' : "") + (ev.edited ? '<span class="badge edited">edited</span>' : "") +
        (ev.attempt > 1 ? '<span class="badge attempt" title="asked again: the process that first asked it died before recording the answer">attempt ' + esc(ev.attempt) + "</span>" : "") +
        '<span class="sum">' + esc(summary(ev)) + "</span>" + timing.durHTML(ev, esc) + '<code class="key">' + esc(ev.key) + "</code>" +
        (ev.child ? '<a class="child-link" href="/ui/runs/' + esc(encodeURIComponent(ev.child)) + '">child run</a>' : "") +
        '<span class="tools"><button type="button" class="small json" aria-expanded="' + raw + '" aria-label="JSON of event ' + ev.seq + '">JSON</button>' +
        (forkable && ev.key && ev.type !== "started" ? '<button type="button" class="small fork-here" aria-label="Fork here: step ' + esc(ev.key) + '">Fork here</button>' : "") +
        (ev.type === "model_response" ? '<button type="button" class="small inspect" aria-expanded="false" data-key="' + esc(ev.key) + '" aria-label="Inspect request: step ' + esc(ev.key) + '">Inspect request</button>' : "") +
        "</span></div>";
      if (ev.type === "model_response" && ev.tool_calls && ev.tool_calls.length) {
        // Calls of one response run in parallel: side by side.
        h += '<div class="lanes">' + ev.tool_calls.map(cardHTML).join("") + "</div>";
      }
      h += partsHTML(ev.parts, id);
      if (raw) h += '<pre class="raw" tabindex="0">' + esc(JSON.stringify(ev, null, 2)) + "</pre>";
      return h + "</li>";
    }

    function flush() {
      scheduled = false;
      const batch = queue;
      queue = [];
      const late = [];
      const result = (r) => {
        if (!r.call_id || results.has(r.call_id)) return;
        results.set(r.call_id, r);
        waiting.delete(r.call_id);
        if (cards.has(r.call_id)) late.push(r); // its card may be on the page
      };
      let ended = null;
      for (const ev of batch) {
        if (ev.type === "model_response" && ev.tool_calls) for (const c of ev.tool_calls) calls.add(c.id);
        else if (ev.type === "tool_result" || ev.type === "handoff_returned") result(ev);
        else if (ev.type === "paused") {
          lastPause = ev;
          if (ev.call_id && !results.has(ev.call_id)) waiting.set(ev.call_id, ev);
        } else if (ev.type === "resumed" && lastPause) {
          // The answer to a pause tool is that call's result; a pause
          // from a child run is answered there, and the handoff's result
          // comes with its return.
          if (lastPause.call_id && !lastPause.child) result({ call_id: lastPause.call_id, label: "answer", output: ev.message || "" });
          lastPause = null;
        } else if (terminal.has(ev.type)) ended = ev;
      }
      if (ended) {
        // The run is over: a call still without a result will get none.
        for (const callID of calls) {
          result({ call_id: callID, label: "no result", output: "the run " + ended.type + (ended.reason ? ": " + ended.reason : "") });
        }
      }
      if (view !== events) {
        for (const ev of batch) if (filters.matches(ev)) view.push(ev);
        shown.textContent = view.length + " shown";
      }
      rowsList.grow(view.length);
      for (const ev of late) settle(ev);
      for (const [callID] of waiting) {
        const c = card(callID);
        const out = c && c.classList.contains("pending") && c.querySelector(".out");
        if (out) out.textContent = pendingText(callID);
      }
      count.textContent = String(events.length);
      // While the journal is replayed the page stays at the top; once the
      // stream is live, it follows the newest event.
      if (follow.checked && streamFollowing && batch.length && view.length) {
        const last = rowsList.row(view.length - 1);
        if (last) last.scrollIntoView({ block: "nearest" });
      }
    }

    // inflight says what a running run waits for (the model, a tool) and
    // for how long, from its newest record: there is no record of a call
    // until it returns.
    const inflight = $("#inflight");
    const openCalls = new Map(); // call id -> its tool_call event, until its result
    setInterval(() => {
      const last = events[events.length - 1];
      const running = root.dataset.state === "running" && !done && last;
      inflight.hidden = !running;
      if (!running) return;
      const since = fmtDur(Math.max(0, Date.now() - Date.parse(last.time)));
      let what;
      if (openCalls.size) {
        const names = [...new Set([...openCalls.values()].map((c) => c.tool))];
        what = "running " + (names.length === 1 ? "tool " + names[0] : names.length + " tools");
      } else if (last.type === "handoff_started" && last.child) {
        what = "waiting on child run " + last.child;
      } else if (last.type === "model_response" && last.tool_calls && last.tool_calls.length) {
        what = "running tools";
      } else {
        const who = last.type === "handoff_started" ? last.target : last.agent;
        what = "waiting on the model" + (who ? " (" + who + ")" : "") + (liveText.size ? ", which is answering" : "");
      }
      inflight.textContent = what + ", " + since;
    }, 200);

    function showLive() {
      live.textContent = "";
      for (const [agent, text] of liveText) {
        live.append(el("span", { class: "who", text: agent + ": " }), text, "\n");
      }
      live.hidden = liveText.size === 0;
    }

    let sideTimer = null;
    function refreshSide(ms) {
      if (sideTimer) return;
      sideTimer = setTimeout(async () => {
        sideTimer = null;
        const box = $("#side-live");
        try {
          const res = await fetch(box.dataset.src, { credentials: "same-origin" });
          if (res.ok) box.innerHTML = await res.text();
        } catch (_) { /* keep the old tree */ }
      }, ms === undefined ? 500 : ms);
    }
    // A long run's page comes without its tree and usage (adding up a long
    // journal takes a while): they come now, beside the first rows.
    if ($("#side-live").dataset.later) refreshSide(0);

    async function refreshStatus() {
      try {
        const res = await fetch(api, { credentials: "same-origin", headers: { Accept: "application/json" } });
        const st = await res.json();
        if (!st || !st.state) return;
        root.dataset.state = st.state;
        if (st.state !== "running") inflight.hidden = true;
        $("#state").textContent = "";
        $("#state").append(el("span", { class: "state state-" + st.state, text: st.state }));
        $("#agent").textContent = st.agent || "";
        if (!convo && $("#turn")) $("#turn").textContent = String(st.turn || 0); // a workflow's page shows nodes instead
        // A run paused for a user's message has the chat box; a teammate
        // waiting for mail the mail form; any other pause the answer form.
        const paused = st.state === "paused";
        const chatting = paused && st.reason === "awaiting user message";
        const mailCard = $("#mail-card");
        if (mailCard) mailCard.hidden = !(paused && st.reason === "idle: awaiting mail");
        if (chatting && chat.hidden) $("#chat-state").textContent = "";
        chat.hidden = !chatting;
        $("#chat-hint").hidden = !chatting;
        const pause = $("#pause");
        pause.hidden = !paused || chatting || !!(mailCard && !mailCard.hidden);
        if (st.state === "paused") {
          $("#pause-reason").textContent = st.reason || "";
          const ctx = $("#pause-context");
          ctx.textContent = st.context || "";
          ctx.hidden = !st.context;
          $("#pause-seq").value = st.pause || "";
        }
        const reason = $("#reason");
        reason.hidden = !(st.state === "failed" || st.state === "stopped");
        if (!reason.hidden) reason.textContent = (st.state === "failed" ? "Failed: " : "Stopped: ") + (st.reason || "");
        if (terminal.has(st.state)) {
          const stop = $("#stop-box");
          if (stop) stop.remove();
        }
        if (st.result !== undefined) {
          $("#result-box").hidden = false;
          $("#result-box").open = true;
          $("#result").textContent = pretty(st.result);
        }
      } catch (_) { /* the next event tries again */ }
    }

    function onEvent(type, data) {
      let ev;
      try { ev = JSON.parse(data); } catch (_) { return; }
      ev.type = ev.type || type;
      if (ev.type === "delta") {
        liveText.set(ev.agent || "", (liveText.get(ev.agent || "") || "") + (ev.text || ""));
        showLive();
        return;
      }
      if (!ev.seq || ev.seq <= lastSeq) return; // a repeat after a reconnect
      lastSeq = ev.seq;
      if (!streamFollowing && lastSeq >= initialLast) {
        // Caught up with the journal as it was when the page was made:
        // what comes now is live.
        streamFollowing = true;
        root.dataset.caughtUp = "true";
      }
      if (ev.type === "started" && ev.reused) {
        reused = ev.reused;
        timeline.dataset.reused = String(reused);
      }
      if (ev.type === "paused") {
        waitsForUser = ev.reason === "awaiting user message";
        if (waitsForUser && !convo) {
          convo = true;
          $("#turn-label").textContent = "messages";
          $("#max-turns")?.remove();
        }
      } else if (ev.type === "resumed" && waitsForUser) {
        userMsgs.add(ev.seq);
        waitsForUser = false;
      }
      if (convo) $("#turn").textContent = String(userMsgs.size);
      events.push(ev);
      bySeq.set(ev.seq, ev);
      timing.add(ev);
      filters.note(ev);
      ganttLater(300);
      queue.push(ev);
      if (!scheduled) {
        scheduled = true;
        requestAnimationFrame(flush);
      }
      if (ev.type === "model_response" && liveText.delete(ev.agent || "")) showLive();
      if (ev.type === "tool_call" && ev.call_id) openCalls.set(ev.call_id, ev);
      else if ((ev.type === "tool_result" || ev.type === "handoff_returned") && ev.call_id) openCalls.delete(ev.call_id);
      if (ev.child || ev.type === "handoff_returned") refreshSide();
      if (streamFollowing && ["paused", "resumed", "turn_completed", "completed", "failed", "stopped"].includes(ev.type)) {
        refreshStatus();
        refreshSide();
      }
      if (terminal.has(ev.type)) done = true;
      // Live, the transcript shows each event at once; a replay draws it
      // a few times a second.
      if (streamFollowing && !transcriptPanel.hidden) renderTranscript();
      else transcriptLater(300);
    }

    // The stream is read with fetch rather than EventSource: it sees every
    // event type (EventSource only dispatches the names it is told), and
    // it decides itself when to reconnect (after=last sequence) and when to
    // stop (the run finished).
    let streamFollowing = false;
    let painted = 0;
    async function stream() {
      for (let attempt = 0; !done; attempt++) {
        try {
          streamState.textContent = lastSeq ? "following…" : "loading…";
          const res = await fetch(api + "/events?after=" + lastSeq, { credentials: "same-origin", headers: { Accept: "text/event-stream" } });
          if (!res.ok) {
            streamState.textContent = "cannot read the events (" + res.status + ")";
            if (res.status === 401 || res.status === 403 || res.status === 404) return;
          } else {
            attempt = 0;
            const reader = res.body.getReader();
            const dec = new TextDecoder();
            let buf = "";
            for (;;) {
              const { value, done: end } = await reader.read();
              if (end) break;
              buf += dec.decode(value, { stream: true });
              // Walk the buffer with an index and cut it once per read: a
              // read may hold thousands of events.
              let from = 0;
              let i;
              while ((i = buf.indexOf("\n\n", from)) >= 0) {
                const block = buf.slice(from, i);
                from = i + 2;
                let type = "message";
                const data = [];
                for (const line of block.split("\n")) {
                  if (line.startsWith("event: ")) type = line.slice(7);
                  else if (line.startsWith("data: ")) data.push(line.slice(6));
                }
                if (data.length) onEvent(type, data.join("\n"));
              }
              buf = buf.slice(from);
              // A long replay arrives faster than it is read, and reads
              // that are ready do not let the page paint: the first rows
              // are drawn at once, and the page paints every 100 ms.
              if (queue.length && (events.length === queue.length || performance.now() - painted > 100)) {
                flush();
                await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
                painted = performance.now();
              }
              if (streamFollowing) streamState.textContent = done ? "" : "live";
            }
          }
        } catch (_) {
          streamState.textContent = "reconnecting…";
        }
        if (done) break;
        await new Promise((r) => setTimeout(r, Math.min(1000 * (attempt + 1), 5000)));
      }
      await new Promise((r) => requestAnimationFrame(r));
      flush();
      transcriptLater(0);
      streamState.textContent = "· run finished";
      root.dataset.loaded = "true";
      refreshStatus();
      refreshSide();
    }

    // The transcript: the conversation as chat messages. A conversation
    // (or a team member) journals each answer twice, as the model's
    // response and as the reply to the user's message (keys m<n>/... or
    // c<n>/...): the reply is shown, and the model text it repeats is not.
    // A turn that failed shows its reason. The messages are a virtual list
    // like the timeline's rows, built again (from every event, in one pass)
    // at most every few hundred milliseconds while the tab is open.
    const message = (key) => String(key || "").split("/")[0];
    const msgHTML = (cls, who, text) => '<div class="' + cls + '"><span class="who">' + esc(who) + "</span>" + esc(text) + "</div>";
    const partsMsgHTML = (cls, who, parts) => '<div class="' + cls + ' with-parts"><span class="who">' + esc(who) + "</span>" + partsHTML(parts, id) + "</div>";
    let msgs = [];
    const transcriptBox = $("#transcript");
    const msgList = newVList(transcriptBox.appendChild(el("div", { class: "t-list" })), { per: 40, estimate: 60, html: (i) => msgs[i] });
    const noMsgs = transcriptBox.appendChild(el("p", { class: "dim", text: "No messages yet." }));
    function transcriptItems() {
      const out = [];
      const replied = new Set();
      for (const ev of events) if (ev.type === "reply" && ev.text) replied.add(message(ev.key) + "\n" + ev.text);
      for (const ev of events) {
        if (ev.type === "started") {
          const input = typeof ev.input === "string" ? ev.input : JSON.stringify(ev.input);
          if (input && input !== "null") out.push(msgHTML("msg user", "user", input));
          if (ev.parts && ev.parts.length) out.push(partsMsgHTML("msg user", "user · attached", ev.parts));
        } else if (ev.type === "resumed" && ev.message) {
          out.push(msgHTML("msg user", "user", ev.message));
        } else if (ev.type === "reply" && ev.is_error) {
          out.push(msgHTML("msg failed", (ev.agent || "") + " · no answer", ev.reason || "the turn failed"));
        } else if ((ev.type === "reply" || (ev.type === "model_response" && !replied.has(message(ev.key) + "\n" + ev.text))) && ev.text) {
          out.push(msgHTML("msg", ev.agent || "", ev.text));
        } else if (ev.type === "handoff_started") {
          out.push('<div class="handover">' + esc((ev.agent || "") + " hands over to " + ev.target) + "</div>");
        } else if (ev.type === "tool_result" && ev.tool && ev.tool.startsWith("transfer_to_")) {
          out.push('<div class="handover">' + esc((ev.agent || "") + " → " + ev.tool.slice(12)) + "</div>");
        } else if (ev.type === "tool_result" && ev.parts && ev.parts.length) {
          out.push(partsMsgHTML("msg tool", (ev.agent || "") + " · " + ev.tool, ev.parts));
        } else if (ev.type === "paused" && ev.reason && ev.reason !== "awaiting user message") {
          out.push('<div class="handover">' + esc("waiting: " + ev.reason) + "</div>");
        }
        if (ev.shared) {
          out.push('<details class="shared"><summary>shared context</summary><pre tabindex="0">' + esc(pretty(ev.shared)) + "</pre></details>");
        }
      }
      return out;
    }
    function renderTranscript() {
      const next = transcriptItems();
      // Messages only added: the list grows; otherwise it is laid out anew.
      let same = next.length >= msgs.length;
      for (let i = 0; same && i < msgs.length; i++) same = next[i] === msgs[i];
      msgs = next;
      if (same) msgList.grow(msgs.length);
      else msgList.reset(msgs.length);
      noMsgs.hidden = msgs.length > 0;
    }
    let transcriptTimer = null;
    const transcriptPanel = $("#panel-transcript");
    function transcriptLater(ms) {
      if (transcriptTimer || transcriptPanel.hidden) return;
      transcriptTimer = setTimeout(() => {
        transcriptTimer = null;
        renderTranscript();
      }, ms);
    }

    // The chat box sends the message without leaving the page: the
    // stream shows it, and the answer, in the transcript.
    const chat = $("#chat");
    chat.addEventListener("submit", async (e) => {
      e.preventDefault();
      const state = $("#chat-state");
      const button = chat.querySelector("button");
      button.disabled = true;
      state.textContent = "sending…";
      const body = new URLSearchParams(new FormData(chat));
      // The box goes away while the message is on its way, not after: the
      // run may answer and wait for the next message before this request
      // returns, and the status that shows the box again must not be undone.
      chat.hidden = true;
      try {
        const res = await fetch(chat.action, { method: "POST", credentials: "same-origin", body });
        if (!res.ok) {
          const page = new DOMParser().parseFromString(await res.text(), "text/html");
          const why = page.querySelector(".error");
          throw new Error(why ? why.textContent : String(res.status));
        }
        $("#chat-message").value = "";
        state.textContent = "sent";
      } catch (err) {
        chat.hidden = false;
        state.textContent = "not sent: " + err.message;
      }
      button.disabled = false;
      refreshStatus();
    });

    // #transcript and #gantt open those tabs, on load and from links.
    const byHash = () => {
      if (location.hash === "#transcript") select(tabs[2]);
      if (location.hash === "#gantt") select(tabs[1]);
      if (location.hash === "#nodes" && tabs[3]) select(tabs[3]);
    };
    window.addEventListener("hashchange", () => {
      byHash();
      if (location.hash === "#transcript") $("#chat-message").focus();
    });
    byHash();
    // The address names a tab, not a place: the page stays at its top
    // (the browser would scroll to the element of that id, past the
    // run's header).
    if (["#transcript", "#gantt", "#nodes"].includes(location.hash)) {
      if ("scrollRestoration" in history) history.scrollRestoration = "manual";
      const top = () => window.scrollTo(0, 0);
      top();
      requestAnimationFrame(top);
      window.addEventListener("load", () => { top(); setTimeout(top, 0); }, { once: true });
    }
    stream();
  }

  document.addEventListener("DOMContentLoaded", () => {
    liveParts();
    liveAgo();
    runPage();
  });
})();
