// The history of past runs, kept in the browser's localStorage so that a
// reload, or another day, can reopen a run: its request, its events and
// how it ended. It is bounded twice: the last MAX_RUNS runs, and at most
// MAX_BYTES of text for all of them (a run's events are cut to
// MAX_RUN_BYTES first, keeping their start and end, as the Events panel
// does). No token is ever stored; the request's secret-bearing fields
// (API keys, headers, secret values) are replaced by a marker before it
// is, so a reopened run must have them filled in again to be re-run. The
// events themselves come redacted from the runner.

const KEY = "runner.playground.history";
export const MAX_RUNS = 20;
export const MAX_BYTES = 2_000_000;
export const MAX_RUN_BYTES = 400_000;
export const NOT_KEPT = "(not kept)";

// Names of request fields whose values may be secrets, at any depth.
const SECRET_FIELDS = new Set(["apikey", "headers", "secrets", "token", "password", "authorization", "sessiontoken", "secretaccesskey"]);

// scrub returns a copy of a request with every value under a secret field
// replaced by NOT_KEPT: the values are dropped, the structure stays.
export function scrub(v) {
  if (Array.isArray(v)) return v.map(scrub);
  if (!v || typeof v !== "object") return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    if (SECRET_FIELDS.has(k.toLowerCase())) out[k] = blank(x);
    else out[k] = scrub(x);
  }
  return out;
}

// blank keeps the shape of a secret field's value (the names of headers
// and of secrets) without any of its strings.
function blank(v) {
  if (Array.isArray(v)) return v.map(blank);
  if (v && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = blank(x);
    return out;
  }
  return typeof v === "string" ? NOT_KEPT : v;
}

// list returns the kept runs, newest first; nothing when storage is
// unavailable or holds something else.
export function list() {
  try {
    const v = JSON.parse(localStorage.getItem(KEY) || "[]");
    return Array.isArray(v) ? v.filter((e) => e && typeof e === "object" && Array.isArray(e.lines)) : [];
  } catch {
    return [];
  }
}

// cutLines keeps lines within budget characters: the first ones and the
// last ones, with a line saying how many were left out between.
function cutLines(lines, budget) {
  let total = 0;
  for (const l of lines) total += l.length + 1;
  if (total <= budget) return lines;
  const head = [];
  const tail = [];
  let used = 0;
  let i = 0;
  let j = lines.length - 1;
  while (i <= j) {
    const next = head.length <= tail.length ? lines[i] : lines[j];
    if (used + next.length + 1 > budget - 100) break;
    used += next.length + 1;
    if (head.length <= tail.length) head.push(lines[i++]);
    else tail.unshift(lines[j--]);
  }
  return head.concat([`… ${j - i + 1} lines not kept …`], tail);
}

// remember adds a run at the head of the history and stores it, dropping
// the oldest runs past MAX_RUNS or MAX_BYTES. entry: {request, lines,
// status, message, executionId}. It returns the stored entry, or null when
// storage refused it.
export function remember(entry) {
  const e = {
    at: new Date().toISOString(),
    executionId: typeof entry.executionId === "string" ? entry.executionId : "",
    status: entry.status || "",
    message: String(entry.message || "").slice(0, 500),
    request: scrub(entry.request),
    lines: cutLines(entry.lines || [], MAX_RUN_BYTES),
  };
  e.id = `${e.at}/${Math.random().toString(36).slice(2, 8)}`;
  let runs = [e].concat(list()).slice(0, MAX_RUNS);
  for (;;) {
    const text = JSON.stringify(runs);
    if (text.length > MAX_BYTES && runs.length > 1) {
      runs = runs.slice(0, -1);
      continue;
    }
    try {
      localStorage.setItem(KEY, text);
      return e;
    } catch {
      // over the browser's quota: drop the oldest and try again
      if (runs.length <= 1) return null;
      runs = runs.slice(0, -1);
    }
  }
}

// clear forgets every kept run.
export function clear() {
  try {
    localStorage.removeItem(KEY);
  } catch {
    // nothing kept
  }
}

// label names a kept run for the list: its workflow's id, else its node
// count.
export function label(e) {
  const req = e.request || {};
  const wf = req.workflow || {};
  if (typeof wf.id === "string" && wf.id) return wf.id;
  const n = Array.isArray(wf.nodes) ? wf.nodes.length : 0;
  return `workflow of ${n} node${n === 1 ? "" : "s"}`;
}

// render lists the kept runs in ul, newest first, each a button that calls
// open with its entry. Every value is written as text.
export function render(ul, open) {
  ul.replaceChildren();
  const runs = list();
  for (const e of runs) {
    const li = document.createElement("li");
    li.dataset.historyId = String(e.id || "");
    const b = document.createElement("button");
    b.type = "button";
    b.className = "open";
    b.textContent = label(e);
    b.title = e.executionId ? `execution ${e.executionId}` : "not accepted";
    b.addEventListener("click", () => open(e));
    const st = document.createElement("span");
    st.className = "badge";
    st.dataset.state = e.status === "invalid" ? "failed" : String(e.status || "");
    st.textContent = String(e.status || "ended");
    const when = document.createElement("span");
    when.className = "when";
    const d = new Date(e.at);
    when.textContent = Number.isNaN(d.getTime()) ? "" : d.toLocaleString();
    li.append(st, b, when);
    ul.append(li);
  }
  return runs.length;
}
