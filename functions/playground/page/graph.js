// The DAG of one level of a workflow (the top level, a map iteration, a
// child workflow), drawn once per level and then only repainted: a node's
// state changes its data-state and a few texts, never the layout.

import { layout } from "./layout.js";

const W = 184; // node box
const H = 60;
const COL = 248; // layer to layer
const ROW = 80; // row to row
const PAD = 28;
const SVG = "http://www.w3.org/2000/svg";

export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = String(text);
  return e;
}

export class Graph {
  // canvas scrolls; plane holds svg (edges) and nodes (boxes).
  constructor(canvas, plane, svg, nodes, hooks) {
    Object.assign(this, { canvas, plane, svg, nodes, hooks });
    this.boxes = new Map(); // full node id → element
    this.out = new Map(); // full node id → its outgoing edge paths
    this.zoom = 1;
    this.size = { w: 0, h: 0 };
    nodes.addEventListener("click", (e) => {
      const box = e.target.closest(".node");
      if (!box) return;
      const id = box.dataset.nodeId;
      if (e.target.closest("[data-action=open]")) hooks.open(id);
      else hooks.select(id);
    });
    nodes.addEventListener("keydown", (e) => {
      const box = e.target.closest(".node");
      if (box && (e.key === "Enter" || e.key === " ")) {
        e.preventDefault();
        hooks.select(box.dataset.nodeId);
      }
    });
  }

  // show draws view: {prefix, nodes: [{id, type, needs}]}.
  show(view) {
    this.view = view;
    this.boxes.clear();
    this.out.clear();
    this.nodes.replaceChildren();
    this.svg.replaceChildren();
    const defs = view.nodes.filter((n) => n && typeof n.id === "string");
    const { layers, at, preds } = layout(defs);
    const tallest = Math.max(1, ...layers.map((l) => l.length));
    const pos = new Map();
    for (const [id, p] of at) {
      const offset = ((tallest - layers[p.layer].length) * ROW) / 2;
      pos.set(id, { x: PAD + p.layer * COL, y: PAD + offset + p.row * ROW });
    }
    const frag = document.createDocumentFragment();
    for (const n of defs) {
      const full = view.prefix + n.id;
      const p = pos.get(n.id);
      const box = el("div", "node");
      box.dataset.nodeId = full;
      box.dataset.type = String(n.type || "");
      box.dataset.state = "pending";
      box.tabIndex = 0;
      box.style.transform = `translate(${p.x}px, ${p.y}px)`;
      const head = el("div", "head");
      head.append(el("span", "dot"), el("b", "name", n.id), el("span", "kind", n.type || "?"));
      const info = el("div", "info");
      const extra = el("div", "extra");
      box.append(head, info, extra);
      if (n.type === "map" || n.type === "workflow") {
        const open = el("button", "open", "open ›");
        open.type = "button";
        open.dataset.action = "open";
        open.tabIndex = -1;
        open.title = n.type === "map" ? "Open an iteration's graph" : "Open the child workflow's graph";
        box.append(open);
      }
      frag.append(box);
      this.boxes.set(full, box);
    }
    this.nodes.append(frag);
    const w = PAD * 2 + Math.max(0, layers.length - 1) * COL + W;
    const h = PAD * 2 + (tallest - 1) * ROW + H;
    this.size = { w, h };
    this.svg.setAttribute("width", String(w));
    this.svg.setAttribute("height", String(h));
    this.svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
    const edges = document.createDocumentFragment();
    for (const [id, ps] of preds) {
      const b = pos.get(id);
      for (const from of ps) {
        const a = pos.get(from);
        const x1 = a.x + W;
        const y1 = a.y + H / 2;
        const x2 = b.x;
        const y2 = b.y + H / 2;
        const dx = Math.max(40, (x2 - x1) / 2);
        const path = document.createElementNS(SVG, "path");
        path.setAttribute("d", `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`);
        path.setAttribute("class", "edge");
        edges.append(path);
        const full = view.prefix + from;
        if (!this.out.has(full)) this.out.set(full, []);
        this.out.get(full).push(path);
      }
    }
    this.svg.append(edges);
    this.setZoom(this.zoom);
    for (const id of this.boxes.keys()) this.paint(id);
  }

  has(id) {
    return this.boxes.has(id);
  }

  // paint refreshes one node from the hooks' describe(id).
  paint(id) {
    const box = this.boxes.get(id);
    if (!box) return;
    const d = this.hooks.describe(id);
    if (box.dataset.state !== d.state) box.dataset.state = d.state;
    box.children[1].textContent = d.info;
    box.children[2].textContent = d.extra;
    box.classList.toggle("selected", d.selected);
    box.title = d.title;
    for (const p of this.out.get(id) || []) p.setAttribute("class", "edge " + d.state);
  }

  paintAll() {
    for (const id of this.boxes.keys()) this.paint(id);
  }

  setZoom(z) {
    this.zoom = Math.min(2, Math.max(0.15, z));
    this.plane.style.width = `${this.size.w}px`;
    this.plane.style.height = `${this.size.h}px`;
    this.plane.style.zoom = String(this.zoom);
  }

  // fit zooms out until the graph fits, but not below least (readable
  // boxes matter more than seeing everything at once).
  fit(least = 0.15) {
    const { clientWidth: cw, clientHeight: ch } = this.canvas;
    if (!this.size.w || !cw) return;
    this.setZoom(Math.max(least, Math.min(1, cw / this.size.w, ch / this.size.h)));
  }

  reveal(id) {
    const box = this.boxes.get(id);
    if (box) box.scrollIntoView({ block: "nearest", inline: "nearest" });
  }
}
