// The playground: a request editor, the run's DAG drawn live from the
// NDJSON stream, and panels for a node, the problems, the result and the
// raw events. Every value from a run or a request is written with
// textContent (or a text attribute), never parsed as HTML.

import { Graph, el } from "./graph.js";
import { readLines } from "./stream.js";
import { parsePath, locate } from "./jsonpath.js";
import { savedToken, keepToken, forgetToken } from "./session.js";
import * as past from "./history.js";
import { startRecording, recordEvent } from "./savetest.js";

const $ = (sel, root = document) => root.querySelector(sel);

// The token comes in the URL's fragment (#token=…), which the browser
// never sends; it is taken out of the URL and the history at once, and
// kept in this module and in this tab's sessionStorage (session.js), so
// that a reload does not ask for it again.
let token = "";
{
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  token = m ? decodeURIComponent(m[1]) : savedToken();
  keepToken(token);
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
}

const ui = {
  editor: $("textarea[name=request]"),
  input: $("textarea[name=input]"),
  models: $("textarea[name=models]"),
  toolsets: $("textarea[name=toolsets]"),
  policy: $("textarea[name=policy]"),
  grants: $("textarea[name=grants]"),
  trace: $("input[name=trace]"),
  example: $("select[name=example]"),
  run: $("button[data-action=run]"),
  stop: $("button[data-action=stop]"),
  conn: $(".conn"),
  crumbs: $(".crumbs"),
  canvas: $(".canvas"),
  empty: $(".canvas .empty"),
  result: $("[data-panel=result]"),
  statusLine: $(".status-line"),
  output: $(".result .output"),
  usage: $(".result .usage"),
  consent: $(".consent"),
  suspended: $(".consent .suspended"),
  problems: $(".problems"),
  inspector: $(".inspector"),
  raw: $(".raw"),
  eventsNote: $(".events-note"),
};

// The runtime fields replace these parts of the request when filled.
const overrides = [
  { ta: ui.models, path: ["runtime", "models"], array: true },
  { ta: ui.toolsets, path: ["runtime", "toolsets"], array: true },
  { ta: ui.policy, path: ["runtime", "http", "policy"], array: false },
  { ta: ui.grants, path: ["authorization", "grants"], array: true },
];

// ---- tabs -----------------------------------------------------------------

function showTab(name) {
  for (const b of document.querySelectorAll("[data-tab]")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
  for (const p of document.querySelectorAll("[data-panel]")) p.hidden = p.dataset.panel !== name;
  if (name === "events") renderRaw(true);
}
for (const b of document.querySelectorAll("[data-tab]")) b.addEventListener("click", () => showTab(b.dataset.tab));
const tabCount = (name, n) => {
  $(`[data-tab=${name}] .count`).textContent = n ? String(n) : "";
};

// ---- formatting -----------------------------------------------------------

export function duration(ms) {
  if (ms === undefined || ms === null) return "";
  if (ms < 1) return ms > 0 ? `${ms.toFixed(1)} ms` : "<1 ms";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  const m = Math.floor(ms / 60000);
  return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
}

const MAX_SHOWN = 200000; // characters of one value shown in a panel
function pretty(v) {
  let s;
  try {
    s = JSON.stringify(v, null, 2);
  } catch {
    s = String(v);
  }
  if (s === undefined) s = "undefined";
  if (s.length > MAX_SHOWN) s = s.slice(0, MAX_SHOWN) + `\n…[${s.length - MAX_SHOWN} more characters not shown]`;
  return s;
}

// ---- the run's state ------------------------------------------------------

const STATES = ["pending", "running", "completed", "failed", "skipped", "suspended", "interrupted"];

let run = newRun();
function newRun() {
  return {
    active: false, // the stream is open
    ended: false, // the stream is over (terminal event or not)
    accepted: false,
    status: "", // completed, failed, suspended, invalid
    records: new Map(), // full node id → record
    decisions: new Map(), // full node id → [permission.decision]
    iters: new Map(), // map node id → Map(index → counts by state)
    terminal: null,
    request: null,
    started: 0,
    events: 0,
    raw: { head: [], tail: [], tailAt: 0, dropped: 0 },
  };
}

function record(id, type) {
  let r = run.records.get(id);
  if (!r) {
    r = { id, type, state: "pending", attempt: 0, attempts: [], startedAt: 0 };
    run.records.set(id, r);
  }
  if (type) r.type = type;
  return r;
}

// setState moves a record and keeps the counts of every map iteration it
// belongs to ("each[3].tag" belongs to iteration 3 of "each").
function setState(r, state) {
  const old = r.state;
  if (old === state) return;
  r.state = state;
  const re = /\[(\d+)\]/g;
  let m;
  while ((m = re.exec(r.id)) !== null) {
    const mapId = r.id.slice(0, m.index);
    const idx = Number(m[1]);
    let its = run.iters.get(mapId);
    if (!its) run.iters.set(mapId, (its = new Map()));
    let c = its.get(idx);
    if (!c) its.set(idx, (c = {}));
    if (old !== "pending") c[old] = (c[old] || 0) - 1;
    c[state] = (c[state] || 0) + 1;
    dirty.add(mapId);
  }
  dirty.add(r.id);
}

function iterState(c) {
  if (c.failed > 0) return "failed";
  if (c.running > 0) return "running";
  if (c.suspended > 0) return "suspended";
  if (c.interrupted > 0) return "interrupted";
  return "completed";
}

function apply(ev) {
  recordEvent(ev);
  const id = typeof ev.nodeId === "string" ? ev.nodeId : "";
  switch (ev.type) {
    case "accepted":
      run.accepted = true;
      run.executionId = ev.executionId;
      break;
    case "node.started": {
      const r = record(id, ev.nodeType);
      r.attempt = ev.attempt;
      r.startedAt = performance.now();
      r.retrying = false;
      // A model role missing from the table, answered by general.
      if (ev.role && typeof ev.role === "object") r.role = ev.role;
      const a = { attempt: ev.attempt, state: "running" };
      if ("input" in ev) a.input = r.input = ev.input;
      r.attempts.push(a);
      setState(r, "running");
      break;
    }
    case "node.completed": {
      const r = record(id, ev.nodeType);
      const a = lastAttempt(r, ev.attempt);
      a.state = "completed";
      a.durationMs = r.durationMs = ev.durationMs;
      if ("output" in ev) a.output = r.output = ev.output;
      r.error = undefined;
      setState(r, "completed");
      break;
    }
    case "node.failed": {
      const r = record(id, ev.nodeType);
      const a = lastAttempt(r, ev.attempt);
      a.state = "failed";
      a.durationMs = r.durationMs = ev.durationMs;
      a.error = r.error = ev.error;
      r.retrying = Boolean(ev.retrying);
      r.attempt = ev.attempt;
      setState(r, ev.retrying ? "running" : "failed");
      break;
    }
    case "node.suspended": {
      const r = record(id, ev.nodeType);
      r.request = ev.request;
      r.reason = ev.reason;
      const a = r.attempts[r.attempts.length - 1];
      if (a && a.state === "running") a.state = "suspended";
      setState(r, "suspended");
      break;
    }
    case "permission.decision": {
      if (!run.decisions.has(id)) run.decisions.set(id, []);
      run.decisions.get(id).push(ev);
      dirty.add(id);
      break;
    }
    case "result":
    case "error":
      run.terminal = ev;
      break;
  }
}

function lastAttempt(r, attempt) {
  let a = r.attempts[r.attempts.length - 1];
  if (!a || a.attempt !== attempt || a.state !== "running") {
    // A node that fails before it starts has a lone node.failed.
    a = { attempt };
    r.attempts.push(a);
  }
  return a;
}

// finish settles every node once the stream is over: nothing is left
// running. A node with a suspended node inside is suspended, any other
// still running is interrupted; nodes that never started were skipped,
// unless the run suspended (then they simply never got their turn).
function finish() {
  run.active = false;
  run.ended = true;
  const suspended = [...run.records.values()].filter((r) => r.state === "suspended").map((r) => r.id);
  for (const r of run.records.values()) {
    if (r.state !== "running") continue;
    const inside = suspended.some((s) => s.startsWith(r.id + ".") || s.startsWith(r.id + "["));
    setState(r, inside ? "suspended" : "interrupted");
    const a = r.attempts[r.attempts.length - 1];
    if (a && a.state === "running") a.state = r.state;
  }
  graph.paintAll();
  renderLegend();
}

function stateOf(id) {
  const r = run.records.get(id);
  if (r) return r.state;
  if (run.ended && run.accepted && run.status !== "suspended") return "skipped";
  return "pending";
}

// ---- views: the levels of the graph --------------------------------------

let doc = null; // the workflow on show
let children = []; // runtime.workflows
let views = []; // the crumbs: [{prefix, nodes, label, defs}]
let selected = "";

function defOf(id) {
  const v = views[views.length - 1];
  if (!v || !id.startsWith(v.prefix)) return null;
  return v.defs.get(id.slice(v.prefix.length)) || null;
}

function makeView(prefix, nodes, label, extra = {}) {
  const list = Array.isArray(nodes) ? nodes.filter((n) => n && typeof n === "object") : [];
  return { prefix, nodes: list, label, defs: new Map(list.map((n) => [String(n.id), n])), ...extra };
}

function showWorkflow(workflow, runtimeWorkflows) {
  doc = workflow;
  children = Array.isArray(runtimeWorkflows) ? runtimeWorkflows : [];
  views = [makeView("", doc && doc.nodes, (doc && doc.id) || "workflow")];
  selected = "";
  drawView();
}

function drawView() {
  const v = views[views.length - 1];
  const t0 = performance.now();
  graph.show(v || makeView("", [], ""));
  const ms = performance.now() - t0;
  const size = $(".foot .size");
  size.dataset.layoutMs = ms.toFixed(1);
  size.textContent = v && v.nodes.length ? `${v.nodes.length} node${v.nodes.length === 1 ? "" : "s"} · drawn in ${duration(ms)}` : "";
  ui.empty.hidden = Boolean(v && v.nodes.length);
  renderCrumbs();
  graph.fit(0.5); // only ever zooms out, and not past half
  renderLegend();
}

function renderCrumbs() {
  ui.crumbs.replaceChildren();
  views.forEach((v, i) => {
    if (i > 0) ui.crumbs.append(el("span", "sep", "›"));
    const b = el("button", "crumb", v.label);
    b.type = "button";
    b.disabled = i === views.length - 1;
    b.addEventListener("click", () => {
      views = views.slice(0, i + 1);
      drawView();
    });
    ui.crumbs.append(b);
    if (v.mapId !== undefined && i === views.length - 1) {
      // Iterations of this map: a picker.
      const sel = el("select", "iters");
      sel.setAttribute("aria-label", "Iteration");
      const its = run.iters.get(v.mapId) || new Map();
      const idxs = [...new Set([...its.keys(), v.index])].sort((a, b) => a - b);
      for (const i2 of idxs) {
        const c = its.get(i2);
        const o = el("option", "", `[${i2}] ${c ? iterState(c) : "not run"}`);
        o.value = String(i2);
        o.selected = i2 === v.index;
        sel.append(o);
      }
      sel.addEventListener("change", () => openIteration(v.mapId, v.mapDef, Number(sel.value), true));
      ui.crumbs.append(sel);
    }
  });
}

function openIteration(mapId, def, index, replace) {
  const inner = def && def.with && def.with.nodes;
  const v = makeView(`${mapId}[${index}].`, inner, `${mapId.split(/[.\]]/).pop()}[${index}]`, { mapId, mapDef: def, index });
  if (replace) views[views.length - 1] = v;
  else views.push(v);
  drawView();
}

function open(id) {
  const def = defOf(id);
  if (!def) return;
  if (def.type === "map") {
    const its = run.iters.get(id);
    let index = 0;
    if (its && its.size) {
      const idxs = [...its.keys()].sort((a, b) => a - b);
      index = idxs.find((i) => iterState(its.get(i)) === "failed") ?? idxs[0];
    }
    openIteration(id, def, index, false);
  } else if (def.type === "workflow") {
    const name = def.with && def.with.workflow;
    const child = children.find((w) => w && w.id === name);
    if (!child) {
      select(id);
      return;
    }
    views.push(makeView(`${id}.`, child.nodes, `${def.id} (${name})`));
    drawView();
  }
}

// describe is what a node box shows.
function describe(id) {
  const state = stateOf(id);
  const r = run.records.get(id);
  const def = defOf(id);
  const parts = [];
  let extra = "";
  if (r) {
    if (state === "running" && r.startedAt) {
      parts.push(r.retrying ? `retrying · ${r.error ? r.error.code : ""}` : duration(performance.now() - r.startedAt));
    } else if (r.durationMs !== undefined) parts.push(duration(r.durationMs));
    if (r.attempt > 1 || r.retrying) parts.push(`attempt ${r.attempt}`);
    if (state === "failed" && r.error) extra = String(r.error.code);
    if (state === "suspended" && r.request) extra = `${r.request.action} ${r.request.resource}`;
  }
  if (def && def.type === "map") {
    const its = run.iters.get(id);
    if (its && its.size) {
      let failed = 0;
      for (const c of its.values()) if (iterState(c) === "failed") failed++;
      extra = `${its.size} iteration${its.size === 1 ? "" : "s"}${failed ? ` · ${failed} failed` : ""}`;
    }
  }
  const ds = run.decisions.get(id);
  if (!extra && ds && ds.length) extra = ds.map((d) => `${d.decision} ${d.resource}`).join(", ");
  return { state, info: parts.join(" · ") || (state === "pending" ? "" : state), extra, selected: id === selected, title: `${id} — ${state}` };
}

const graph = new Graph(ui.canvas, $(".plane"), $(".edges"), $(".nodes"), { describe, select, open });

// ---- live repaint ---------------------------------------------------------

const dirty = new Set();
let frame = 0;
function schedule() {
  if (!frame) frame = requestAnimationFrame(flush);
}
function flush() {
  frame = 0;
  for (const id of dirty) graph.paint(id);
  if (selected && dirty.has(selected)) renderInspector();
  dirty.clear();
  renderStatus();
  renderLegend();
  if (!$("[data-panel=events]").hidden) renderRaw(false);
  const v = views[views.length - 1];
  if (v && v.mapId !== undefined && run.iters.has(v.mapId)) {
    // The iteration picker lists what has run so far.
    const sel = $(".crumbs select");
    if (sel && sel.options.length !== new Set([...run.iters.get(v.mapId).keys(), v.index]).size) renderCrumbs();
  }
}
setInterval(() => {
  if (!run.active) return;
  for (const r of run.records.values()) if (r.state === "running" && graph.has(r.id)) dirty.add(r.id);
  schedule();
}, 250);

// ---- raw events: bounded --------------------------------------------------

const RAW_HEAD = 200;
const RAW_TAIL = 800;
const RAW_LINE = 4000;
let rawShownAt = 0;

function keepRaw(line) {
  const raw = run.raw;
  const cut = line.length > RAW_LINE ? line.slice(0, RAW_LINE) + ` …[${line.length - RAW_LINE} more characters]` : line;
  if (raw.head.length < RAW_HEAD) raw.head.push(cut);
  else {
    if (raw.tail.length < RAW_TAIL) raw.tail.push(cut);
    else {
      raw.tail[raw.tailAt] = cut;
      raw.tailAt = (raw.tailAt + 1) % RAW_TAIL;
      raw.dropped++;
    }
  }
}

function rawLines() {
  const raw = run.raw;
  const tail = raw.tail.slice(raw.tailAt).concat(raw.tail.slice(0, raw.tailAt));
  const out = raw.head.slice();
  if (raw.dropped) out.push(`… ${raw.dropped} lines not kept …`);
  return out.concat(tail);
}

function renderRaw(now) {
  tabCount("events", run.events);
  const t = performance.now();
  if (!now && t - rawShownAt < 500) return;
  rawShownAt = t;
  ui.raw.textContent = rawLines().join("\n");
  ui.eventsNote.textContent = run.raw.dropped
    ? `${run.events} events; the first ${RAW_HEAD} and the last ${RAW_TAIL} kept`
    : `${run.events} events`;
}

// ---- panels ---------------------------------------------------------------

function select(id) {
  const prev = selected;
  selected = id;
  graph.paint(prev);
  graph.paint(id);
  renderInspector();
  showTab("inspector");
}

function section(title, body) {
  const s = el("section", "isect");
  s.append(el("h3", "", title), body);
  return s;
}

function renderInspector() {
  const box = ui.inspector;
  box.replaceChildren();
  const id = selected;
  if (!id) {
    box.append(el("p", "hint", "Click a node to inspect it."));
    return;
  }
  const r = run.records.get(id);
  const def = defOf(id);
  const state = stateOf(id);
  const head = el("div", "ihead");
  const badge = el("span", "badge", state);
  badge.dataset.state = state;
  head.append(el("h2", "", id), el("span", "kind", (r && r.type) || (def && def.type) || ""), badge);
  box.append(head);
  if (def && (def.type === "map" || def.type === "workflow")) {
    const b = el("button", "", def.type === "map" ? "Open an iteration" : "Open the child workflow");
    b.type = "button";
    b.addEventListener("click", () => open(id));
    box.append(b);
  }
  if (def && def.type === "map") {
    const its = run.iters.get(id);
    if (its && its.size) {
      const list = el("div", "iterlist");
      for (const i of [...its.keys()].sort((a, b) => a - b)) {
        const st = iterState(its.get(i));
        const b = el("button", "iter", `[${i}]`);
        b.type = "button";
        b.dataset.state = st;
        b.title = `iteration ${i}: ${st}`;
        b.addEventListener("click", () => openIteration(id, def, i, false));
        list.append(b);
      }
      box.append(section(`Iterations (${its.size})`, list));
    }
  }
  if (r && r.attempts.length) {
    const t = el("table", "attempts");
    const hr = el("tr");
    for (const h of ["attempt", "state", "duration", "error"]) hr.append(el("th", "", h));
    t.append(hr);
    for (const a of r.attempts) {
      const tr = el("tr");
      const st = el("td", "st", a.state || "");
      st.dataset.state = a.state || "";
      tr.append(el("td", "", a.attempt), st, el("td", "", duration(a.durationMs)), el("td", "", a.error ? `${a.error.code}: ${a.error.message}` : ""));
      t.append(tr);
    }
    box.append(section("Attempts", t));
  }
  if (r && r.role) {
    box.append(section("Model role", el("p", "", `${r.role.requested} is not in the model table: ran on ${r.role.used}`)));
  }
  if (r && r.error && state !== "completed") {
    const e = el("div", "err");
    e.append(el("code", "", r.error.code), el("span", "", " " + r.error.message));
    box.append(section("Error", e));
  }
  if (r && r.request) box.append(section("Awaiting consent", el("p", "", `${r.request.action} ${r.request.resource} (${r.reason || "consent"})`)));
  if (r && "input" in r) box.append(section("Input", el("pre", "json", pretty(r.input))));
  if (r && "output" in r) box.append(section("Output", el("pre", "json", pretty(r.output))));
  if (r && !("input" in r) && !("output" in r) && !run.request?.trace) box.append(el("p", "hint", "Turn trace on to see inputs and outputs."));
  const ds = run.decisions.get(id) || [];
  if (ds.length) {
    const ul = el("ul", "decisions");
    for (const d of ds) {
      const li = el("li");
      const b = el("span", "badge", d.decision);
      b.dataset.decision = d.decision;
      li.append(b, el("code", "", ` ${d.action} ${d.resource}`), el("div", "reason", `${d.source}: ${d.reason}`));
      ul.append(li);
    }
    box.append(section("Permission decisions", ul));
  }
  if (def) box.append(section("Definition", el("pre", "json", pretty(def))));
}

function renderStatus() {
  if (!run.active) return;
  const t = performance.now() - run.started;
  ui.statusLine.textContent = `running · ${duration(t)} · ${run.events} events`;
  tabCount("events", run.events);
}

function setStatus(status, message) {
  run.status = status;
  if (status) ui.result.dataset.status = status;
  else delete ui.result.dataset.status;
  ui.statusLine.replaceChildren();
  if (status) {
    const b = el("span", "badge", status);
    b.dataset.state = status === "invalid" ? "failed" : status;
    ui.statusLine.append(b);
  }
  if (message) ui.statusLine.append(el("span", "msg", " " + message));
}

function renderTerminal(ev) {
  ui.output.textContent = "";
  ui.usage.replaceChildren();
  ui.consent.hidden = true;
  if (ev.type === "result") {
    setStatus(ev.status, `in ${duration(ev.durationMs)}`);
    ui.output.textContent = pretty(ev.output);
    for (const [k, v] of Object.entries(ev.usage || {})) ui.usage.append(el("dt", "", k), el("dd", "", v));
    if (ev.status === "suspended" && Array.isArray(ev.suspended)) {
      ui.suspended.replaceChildren();
      let patterns = 0;
      for (const s of ev.suspended) {
        const li = el("li");
        li.append(el("code", "", `${s.action} ${s.resource}`), el("span", "", ` for ${s.nodeId}`));
        if (isPattern(s.resource)) {
          // A tool may be named "*": granted as shown, the resource is a
          // pattern, and allows every tool of the toolset on the re-run,
          // ones this list never named included.
          patterns++;
          li.append(el("p", "hint pattern", "This resource is a pattern: granting it would allow more than this action. Grant by hand in Runtime › authorization.grants, if at all."));
        }
        ui.suspended.append(li);
      }
      const grant = $("[data-action=grant]");
      grant.disabled = patterns > 0;
      grant.title = patterns ? "A resource awaiting consent is a pattern: grant by hand" : "";
      ui.consent.hidden = false;
    }
  } else {
    const e = ev.error || {};
    setStatus("failed", `${e.code}: ${e.message}`);
    if (e.nodeId) {
      ui.output.textContent = `at node ${e.nodeId}`;
    }
  }
}

// ---- problems -------------------------------------------------------------

// Where a problem's path lives: the editor, the input field, or one of
// the runtime fields, with the path inside that text.
function target(path) {
  const segs = parsePath(path);
  for (const o of overrides) {
    if (o.ta.value.trim() && o.path.every((p, i) => segs[i] === p)) return { ta: o.ta, segs: segs.slice(o.path.length) };
  }
  if (lastBuild.bare) {
    if (segs[0] === "workflow") return { ta: ui.editor, segs: segs.slice(1) };
    if (segs[0] === "input") return { ta: ui.input, segs: segs.slice(1) };
  }
  return { ta: ui.editor, segs };
}

function jump(ta, start, end) {
  const d = ta.closest("details");
  if (d) d.open = true;
  ta.focus();
  ta.setSelectionRange(start, end);
  const line = ta.value.slice(0, start).split("\n").length - 1;
  const lh = parseFloat(getComputedStyle(ta).lineHeight) || 18;
  ta.scrollTop = Math.max(0, line * lh - ta.clientHeight / 3);
}

function showProblems(list) {
  ui.problems.replaceChildren();
  for (const p of list) {
    const li = el("li", "problem");
    li.dataset.path = p.path || "";
    li.tabIndex = 0;
    li.append(el("code", "path", p.path || "(the request)"), el("span", "msg", p.message));
    const go = () => {
      if (p.ta) return jump(p.ta, p.offset, p.offset);
      const t = target(p.path || "");
      const at = locate(t.ta.value, t.segs);
      jump(t.ta, at.start, at.end);
    };
    li.addEventListener("click", go);
    li.addEventListener("keydown", (e) => e.key === "Enter" && go());
    ui.problems.append(li);
  }
  tabCount("problems", list.length);
  if (list.length) showTab("problems");
}

// ---- the request ----------------------------------------------------------

let lastBuild = { bare: false };

class Problems extends Error {
  constructor(list) {
    super(list[0].message);
    this.list = list;
  }
}

function parseField(ta, name) {
  try {
    return JSON.parse(ta.value);
  } catch (e) {
    const m = /position (\d+)/.exec(e.message);
    throw new Problems([{ path: name, message: `not JSON: ${e.message}`, ta, offset: m ? Number(m[1]) : 0 }]);
  }
}

// syncTrace sets the trace checkbox, which decides what is sent, from a
// request's own trace once per text of the editor: a later click on the
// checkbox holds until the text changes.
let traceFrom = null;
function syncTrace(doc, bare) {
  if (ui.editor.value === traceFrom) return;
  traceFrom = ui.editor.value;
  if (!bare && typeof doc.trace === "boolean") ui.trace.checked = doc.trace;
}

// build turns the editor and fields into the request to send.
function build() {
  const text = ui.editor.value;
  if (!text.trim()) throw new Problems([{ path: "", message: "the editor is empty: pick an example or paste a request", ta: ui.editor, offset: 0 }]);
  const doc = parseField(ui.editor, "");
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) {
    throw new Problems([{ path: "", message: "the editor must hold a JSON object: a request or a workflow", ta: ui.editor, offset: 0 }]);
  }
  const bare = !("workflow" in doc) && Array.isArray(doc.nodes);
  syncTrace(doc, bare);
  let req;
  if (bare) {
    req = { version: 1, workflow: doc };
    if (ui.input.value.trim()) req.input = parseField(ui.input, "input");
  } else req = doc;
  for (const o of overrides) {
    if (!o.ta.value.trim()) continue;
    const v = parseField(o.ta, o.path.join("."));
    if (o.array !== Array.isArray(v)) {
      throw new Problems([{ path: o.path.join("."), message: o.array ? "must be an array" : "must be an object", ta: o.ta, offset: 0 }]);
    }
    let at = req;
    for (const k of o.path.slice(0, -1)) {
      if (!at[k] || typeof at[k] !== "object") at[k] = {};
      at = at[k];
    }
    at[o.path[o.path.length - 1]] = v;
  }
  req.trace = ui.trace.checked;
  lastBuild = { bare };
  return req;
}

// compact is JSON.stringify with two-space indents, except that a value
// short enough stays on one line: examples keep their shape.
export function compact(v, indent = "") {
  const line = flat(v);
  if (v === null || typeof v !== "object" || line.length + indent.length <= 80) return line;
  const inner = indent + "  ";
  if (Array.isArray(v)) return `[\n${v.map((x) => inner + compact(x, inner)).join(",\n")}\n${indent}]`;
  const keys = Object.keys(v);
  if (keys.length === 0) return "{}";
  return `{\n${keys.map((k) => `${inner}${JSON.stringify(k)}: ${compact(v[k], inner)}`).join(",\n")}\n${indent}}`;
}

// flat is a value on one line, spaced as people write it.
function flat(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return `[${v.map(flat).join(", ")}]`;
  return `{${Object.keys(v).map((k) => `${JSON.stringify(k)}: ${flat(v[k])}`).join(", ")}}`;
}

// loadRequest fills the editor and fields from a whole request: the
// runtime parts that have a field move there.
function loadRequest(text) {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch {
    ui.editor.value = text;
    return;
  }
  for (const o of overrides) {
    let at = doc;
    for (const k of o.path.slice(0, -1)) at = at && typeof at === "object" ? at[k] : undefined;
    const k = o.path[o.path.length - 1];
    if (at && typeof at === "object" && k in at) {
      o.ta.value = compact(at[k]);
      delete at[k];
    } else o.ta.value = "";
  }
  if (doc.runtime && Object.keys(doc.runtime.http || {}).length === 0) delete doc.runtime.http;
  if (doc.runtime && Object.keys(doc.runtime).length === 0) delete doc.runtime;
  if (doc.authorization && Object.keys(doc.authorization).length === 0) delete doc.authorization;
  ui.input.value = "";
  $("[data-sect=runtime]").open = overrides.some((o) => o.ta.value.trim());
  ui.editor.value = compact(doc);
  preview();
}

// preview lays out what the editor holds, before any run.
let previewTimer = 0;
function preview() {
  if (run.active) return;
  let doc;
  try {
    doc = JSON.parse(ui.editor.value);
  } catch {
    return;
  }
  if (!doc || typeof doc !== "object") return;
  const bare = !("workflow" in doc) && Array.isArray(doc.nodes);
  $("[data-sect=input]").classList.toggle("unused", !bare);
  syncTrace(doc, bare);
  const wf = bare ? doc : doc.workflow;
  const rt = doc.runtime && doc.runtime.workflows;
  const key = JSON.stringify([wf, rt]);
  if (key === preview.key) return;
  preview.key = key;
  run = newRun();
  setStatus("", "");
  showWorkflow(wf && typeof wf === "object" ? wf : null, rt);
}
ui.editor.addEventListener("input", () => {
  ui.example.value = "";
  clearTimeout(previewTimer);
  previewTimer = setTimeout(preview, 300);
});

// ---- running --------------------------------------------------------------

let controller = null;

async function start(req) {
  if (run.active) return;
  run = newRun();
  run.request = req;
  startRecording(req);
  run.active = true;
  run.started = performance.now();
  // What runs is on show: a preview pending from the last keystroke
  // must not replace it.
  clearTimeout(previewTimer);
  preview.key = JSON.stringify([req.workflow, req.runtime && req.runtime.workflows]);
  const keepView = views.map((v) => v);
  try {
    showWorkflow(req.workflow, req.runtime && req.runtime.workflows);
    // Stay on the level on show (an iteration, a child) when re-running.
    if (keepView.length > 1 && keepView[0].label === views[0].label) {
      views = keepView;
      drawView();
    }
  } catch {
    // A document the graph cannot draw still goes to the runner, whose
    // answer (its problems) says what is wrong; the run must not stay
    // "active" with nothing sent, which would leave the page stuck.
    showWorkflow(null, []);
  }
  ui.problems.replaceChildren();
  tabCount("problems", 0);
  tabCount("events", 0);
  ui.output.textContent = "";
  ui.usage.replaceChildren();
  ui.consent.hidden = true;
  ui.raw.textContent = "";
  setStatus("", "");
  ui.statusLine.textContent = "starting…";
  ui.run.disabled = true;
  ui.stop.disabled = false;
  controller = new AbortController();
  let res;
  try {
    res = await fetch("/v1/executions", {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify(req),
      signal: controller.signal,
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
  } catch (e) {
    done("failed", controller.signal.aborted ? "stopped before the runner answered" : `could not reach the runner: ${e.message}`);
    return;
  }
  if (res.status !== 200) {
    let body = null;
    try {
      body = await res.json();
    } catch {
      // not JSON: the status says it
    }
    const err = (body && body.error) || { code: String(res.status), message: res.statusText };
    if (res.status === 400 && Array.isArray(err.details)) {
      done("invalid", `${err.details.length} problem${err.details.length === 1 ? "" : "s"}`);
      showProblems(err.details);
    } else {
      done(res.status === 400 || res.status === 413 ? "invalid" : "failed", `${res.status} ${err.code}: ${err.message}`);
      if (res.status === 401) {
        forgetToken();
        askToken();
      }
    }
    return;
  }
  showTab("result");
  try {
    await readLines(res.body, (line) => {
      run.events++;
      keepRaw(line);
      let ev;
      try {
        ev = JSON.parse(line);
      } catch {
        return;
      }
      apply(ev);
      schedule();
    });
  } catch (e) {
    if (!run.terminal) {
      done("failed", controller.signal.aborted ? "stopped: the execution was cancelled" : `the stream broke: ${e.message}`);
      return;
    }
  }
  if (run.terminal) {
    finish();
    renderTerminal(run.terminal);
    endButtons();
    renderRaw(true);
    if (selected) renderInspector();
    keepRun();
  } else done("failed", "the stream ended without a terminal event");
}

function done(status, message) {
  finish();
  setStatus(status, message);
  endButtons();
  renderRaw(true);
  if (selected) renderInspector();
  if (status !== "invalid") showTab("result");
  keepRun();
}

// keepRun adds the run that just ended to the history (history.js).
function keepRun() {
  if (!run.request) return;
  const t = run.terminal;
  const message = t && t.type === "error" && t.error ? `${t.error.code}: ${t.error.message}` : ui.statusLine.textContent;
  past.remember({ request: run.request, lines: rawLines(), status: run.status || (t && t.status) || "", message, executionId: run.executionId });
  renderHistory();
}

function renderHistory() {
  tabCount("history", past.render($(".history"), reopen));
}

// reopen shows a run of the history as it ended: its request in the
// editor, its graph and panels from its kept events.
function reopen(e) {
  if (run.active) return;
  loadRequest(JSON.stringify(e.request));
  ui.example.value = "";
  run = newRun();
  run.request = e.request;
  const wf = e.request && e.request.workflow;
  preview.key = JSON.stringify([wf, e.request && e.request.runtime && e.request.runtime.workflows]);
  showWorkflow(wf && typeof wf === "object" ? wf : null, e.request && e.request.runtime && e.request.runtime.workflows);
  clearResult();
  for (const line of e.lines) {
    run.events++;
    keepRaw(line);
    try {
      apply(JSON.parse(line));
    } catch {
      // the marker of lines not kept
    }
  }
  finish();
  if (run.terminal) renderTerminal(run.terminal);
  else setStatus(e.status, e.message);
  renderRaw(true);
  showTab("result");
}

$("[data-action=clear-history]").addEventListener("click", () => {
  past.clear();
  renderHistory();
});

// clearResult empties the panels of the last run.
function clearResult() {
  ui.output.textContent = "";
  ui.usage.replaceChildren();
  ui.consent.hidden = true;
  ui.raw.textContent = "";
  tabCount("events", 0);
}

function endButtons() {
  ui.run.disabled = false;
  ui.stop.disabled = true;
  controller = null;
}

function runFromEditor() {
  let req;
  try {
    req = build();
  } catch (e) {
    if (!(e instanceof Problems)) throw e;
    run = newRun();
    if (e.list.some((p) => p.ta === ui.editor)) {
      // The editor holds no request: the graph of the last one goes.
      preview.key = undefined;
      showWorkflow(null, []);
    }
    clearResult();
    graph.paintAll();
    renderLegend();
    setStatus("invalid", e.message);
    showProblems(e.list);
    return;
  }
  start(req);
}

ui.run.addEventListener("click", runFromEditor);
ui.stop.addEventListener("click", () => controller && controller.abort());
document.addEventListener("keydown", (e) => {
  if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
    e.preventDefault();
    runFromEditor();
  }
});

// isPattern reports a resource that, used as a grant, would match more
// than itself ('*' is the one wildcard of grants, engine/glob).
function isPattern(resource) {
  return typeof resource !== "string" || resource.includes("*");
}

// Consent: the same request again, with the awaited actions granted.
$("[data-action=grant]").addEventListener("click", () => {
  const t = run.terminal;
  if (!t || !Array.isArray(t.suspended) || t.suspended.some((s) => isPattern(s.resource))) return;
  let grants = [];
  if (ui.grants.value.trim()) {
    try {
      grants = JSON.parse(ui.grants.value);
    } catch {
      grants = [];
    }
  } else if (run.request && run.request.authorization && Array.isArray(run.request.authorization.grants)) {
    grants = run.request.authorization.grants.slice();
  }
  if (!Array.isArray(grants)) grants = [];
  for (const s of t.suspended) {
    if (!grants.some((g) => g && g.action === s.action && g.resource === s.resource)) grants.push({ action: s.action, resource: s.resource });
  }
  ui.grants.value = compact(grants);
  $("[data-sect=runtime]").open = true;
  runFromEditor();
});

// ---- copy buttons ---------------------------------------------------------

function command(kind) {
  const req = build();
  const body = JSON.stringify(req);
  const base = location.origin;
  // The body on one line in a quoted here-document: nothing in it is
  // expanded, and it can be longer than a command line.
  const doc = `<<'JSON'\n${body}\nJSON`;
  if (kind === "curl") {
    return `curl -sN -H "Authorization: Bearer $RUNNER_TOKEN" -H 'Content-Type: application/json' --data-binary @- ${base}/v1/executions ${doc}`;
  }
  return `runnerctl --url ${base} run - ${doc}`;
}

async function copy(button, text, show) {
  const label = button.textContent;
  if (show) show.textContent = text; // also there to read, or copy by hand
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => (button.textContent = label), 1500);
}

for (const kind of ["runnerctl", "curl"]) {
  const b = $(`[data-action=copy-${kind}]`);
  b.addEventListener("click", () => {
    let text;
    try {
      text = command(kind);
    } catch (e) {
      if (e instanceof Problems) return showProblems(e.list);
      throw e;
    }
    copy(b, text, $(".copied"));
  });
}
$("[data-action=copy-events]").addEventListener("click", (e) => copy(e.target, rawLines().join("\n")));

// ---- zoom -----------------------------------------------------------------

$("[data-action=zoom-in]").addEventListener("click", () => graph.setZoom(graph.zoom * 1.25));
$("[data-action=zoom-out]").addEventListener("click", () => graph.setZoom(graph.zoom / 1.25));
$("[data-action=zoom-fit]").addEventListener("click", () => graph.fit());

// The legend counts the nodes on show in each state.
const legend = $(".legend");
const chips = new Map();
for (const s of STATES) {
  const chip = el("span", "chip");
  chip.dataset.state = s;
  chip.append(el("span", "", s), el("b", "", ""));
  legend.append(chip);
  chips.set(s, chip.lastChild);
}
function renderLegend() {
  const n = new Map(STATES.map((s) => [s, 0]));
  for (const box of ui.canvas.querySelectorAll(".node")) n.set(box.dataset.state, (n.get(box.dataset.state) || 0) + 1);
  for (const [s, b] of chips) b.textContent = n.get(s) ? ` ${n.get(s)}` : "";
}

// ---- connection, token, examples -------------------------------------------

function askToken() {
  const f = $("form.token");
  f.hidden = false;
  ui.conn.dataset.conn = "unauthorized";
  ui.conn.textContent = "needs a token";
}

$("form.token").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("input[name=token]");
  token = input.value.trim();
  keepToken(token);
  input.value = "";
  connect();
});

async function connect() {
  if (!token) return askToken();
  try {
    const res = await fetch("/v1/capabilities", { headers: { Authorization: `Bearer ${token}` }, cache: "no-store", credentials: "omit" });
    if (res.status === 401) {
      forgetToken();
      return askToken();
    }
    const caps = await res.json();
    $("form.token").hidden = true;
    ui.conn.dataset.conn = "ok";
    ui.conn.textContent = `${caps.runner.name} ${caps.runner.version} · ${caps.nodeTypes.length} node types`;
  } catch (e) {
    ui.conn.dataset.conn = "down";
    ui.conn.textContent = `runner unreachable: ${e.message}`;
  }
}

async function loadExamples() {
  let list = [];
  try {
    list = await (await fetch("examples.json", { cache: "no-store" })).json();
  } catch {
    return;
  }
  for (const x of list) {
    const o = el("option", "", x.name);
    o.value = x.name;
    ui.example.append(o);
  }
  ui.example.addEventListener("change", () => {
    const x = list.find((e) => e.name === ui.example.value);
    if (x) loadRequest(x.text);
  });
  if (!ui.editor.value.trim()) {
    const hello = list.find((e) => e.name === "hello.json");
    if (hello) {
      ui.example.value = hello.name;
      loadRequest(hello.text);
    }
  }
}

connect();
loadExamples();
showWorkflow(null, []);
renderHistory();
