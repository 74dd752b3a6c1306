// "Save as test": a finished run written as a `runnerctl test` case
// (docs/testing.md), as `runnerctl run --save-test` writes one: the
// request's workflow, input and runtime (model keys and headers, toolset
// headers and secret values removed: none is ever written), its model,
// agent, tool and http nodes pinned to the outputs they produced (or the
// errors they ended with), and its result as the expectation. Node outputs
// are in the events only when the request is traced.

const PINNED = new Set(["model", "agent", "tool", "http"]);

let request = null;
let pins = {};
let nodes = {};
let decisions = [];
let terminal = null;
let url = "";

const button = document.querySelector("button[data-action=save-test]");
const link = document.querySelector("a.save-test");
const note = document.querySelector(".save-test-note");
const shown = document.querySelector(".copied");

// startRecording begins keeping what a case needs of the run of req.
export function startRecording(req) {
  request = req;
  pins = {};
  nodes = {};
  decisions = [];
  terminal = null;
  if (url) URL.revokeObjectURL(url);
  url = "";
  if (link) {
    link.hidden = true;
    link.removeAttribute("href");
  }
  if (note) note.textContent = "";
  if (button) button.disabled = true;
}

// recordEvent keeps what a case needs of one event; a run's events are
// not kept whole.
export function recordEvent(ev) {
  if (!request || !ev || typeof ev !== "object") return;
  const id = ev.nodeId;
  switch (ev.type) {
    case "node.started":
      nodes[id] = { status: "running", attempts: ev.attempt };
      break;
    case "node.completed":
      nodes[id] = { status: "completed", attempts: ev.attempt };
      if (PINNED.has(ev.nodeType) && "output" in ev) pins[id] = { output: ev.output };
      break;
    case "node.failed":
      if (ev.retrying) break;
      nodes[id] = { status: "failed", attempts: ev.attempt, code: ev.error && ev.error.code };
      if (PINNED.has(ev.nodeType) && ev.error) pins[id] = { error: { code: ev.error.code, message: ev.error.message } };
      break;
    case "node.suspended":
      nodes[id] = { status: "suspended" };
      break;
    case "permission.decision":
      decisions.push({ nodeId: ev.nodeId, action: ev.action, resource: ev.resource, decision: ev.decision, source: ev.source });
      break;
    case "result":
    case "error":
      terminal = ev;
      if (button) button.disabled = false;
      break;
  }
}

// withoutKeys is a copy of rt without what must never be written.
function withoutKeys(rt) {
  const out = JSON.parse(JSON.stringify(rt || {}));
  for (const m of out.models || []) {
    delete m.apiKey;
    delete m.headers;
  }
  for (const t of out.toolsets || []) delete t.headers;
  const secrets = out.http && out.http.secrets;
  if (secrets) {
    for (const k of Object.keys(secrets)) {
      const s = secrets[k];
      secrets[k] = typeof s === "object" && s !== null ? { ...s, value: "removed-by-save-test" } : "removed-by-save-test";
    }
  }
  return out;
}

// caseOf is the case of the finished run.
export function caseOf() {
  const req = request;
  const c = { name: (req.workflow && req.workflow.id) || "saved run", workflow: req.workflow };
  if ("input" in req) c.input = req.input;
  if (req.runtime) c.runtime = withoutKeys(req.runtime);
  for (const k of ["permissions", "authorization", "toolPolicies", "consentAvailable"]) {
    if (k in req) c[k] = req[k];
  }
  if (Object.keys(pins).length) c.mocks = { nodes: pins };
  const expect = {};
  if (terminal.type === "result") {
    expect.status = terminal.status;
    expect.output = terminal.output;
  } else {
    expect.status = "failed";
    const err = terminal.error || {};
    const at = err.nodeId && nodes[err.nodeId];
    expect.error = { code: (at && at.code) || err.code };
    if (err.nodeId) expect.error.nodeId = err.nodeId;
  }
  const top = {};
  for (const n of (req.workflow && req.workflow.nodes) || []) {
    const got = nodes[n.id] || { status: "skipped" };
    const e = { status: got.status };
    if (got.attempts > 1) e.attempts = got.attempts;
    if (got.status === "failed" && got.code) e.error = { code: got.code };
    top[n.id] = e;
  }
  if (Object.keys(top).length) expect.nodes = top;
  if (decisions.length) expect.decisions = decisions;
  c.expect = expect;
  return c;
}

if (button) {
  button.addEventListener("click", () => {
    if (!request || !terminal) return;
    const text = JSON.stringify(caseOf(), null, 2) + "\n";
    if (url) URL.revokeObjectURL(url);
    url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
    const base = String((request.workflow && request.workflow.id) || "run").replace(/[^A-Za-z0-9_-]+/g, "_");
    link.href = url;
    link.download = `${base}.test.json`;
    link.textContent = link.download;
    link.hidden = false;
    if (note) note.textContent = request.trace ? "" : "The request was not traced: node outputs could not be pinned. Turn trace on and run again.";
    if (shown) shown.textContent = text;
    link.click();
  });
}
