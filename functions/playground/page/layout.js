// A layered layout for workflow DAGs, left to right: each node's layer is
// the length of the longest chain of needs before it (longest-path
// layering), and the nodes of a layer are ordered by the mean position of
// their neighbours in the layer before (barycentre ordering), sweeping
// down and back up a few times to undo crossings.

// layout takes [{id, needs: [id…]}] and returns {layers: [[id…]…],
// at: Map(id → {layer, row})}. Needs naming no node of the list are
// ignored; a cycle (which the runner refuses anyway) is broken by placing
// what is left in one more layer.
export function layout(nodes) {
  const ids = new Set(nodes.map((n) => n.id));
  const preds = new Map();
  const succs = new Map();
  for (const n of nodes) {
    preds.set(n.id, []);
    succs.set(n.id, []);
  }
  for (const n of nodes) {
    // needs comes from whatever was pasted: only an array is read (the
    // runner refuses anything else, and a number would throw here).
    for (const d of Array.isArray(n.needs) ? n.needs : []) {
      if (ids.has(d) && d !== n.id && !preds.get(n.id).includes(d)) {
        preds.get(n.id).push(d);
        succs.get(d).push(n.id);
      }
    }
  }

  // Longest-path layers, in topological order (Kahn).
  const layerOf = new Map();
  const indeg = new Map();
  for (const n of nodes) indeg.set(n.id, preds.get(n.id).length);
  const queue = nodes.filter((n) => indeg.get(n.id) === 0).map((n) => n.id);
  for (let i = 0; i < queue.length; i++) {
    const id = queue[i];
    let l = 0;
    for (const p of preds.get(id)) l = Math.max(l, layerOf.get(p) + 1);
    layerOf.set(id, l);
    for (const s of succs.get(id)) {
      indeg.set(s, indeg.get(s) - 1);
      if (indeg.get(s) === 0) queue.push(s);
    }
  }
  let deepest = -1;
  for (const l of layerOf.values()) deepest = Math.max(deepest, l);
  for (const n of nodes) {
    if (!layerOf.has(n.id)) layerOf.set(n.id, deepest + 1);
  }

  const layers = [];
  for (const n of nodes) {
    const l = layerOf.get(n.id);
    while (layers.length <= l) layers.push([]);
    layers[l].push(n.id);
  }

  // Barycentre ordering: document order first, then sweeps.
  const row = new Map();
  const number = (layer) => layer.forEach((id, i) => row.set(id, i));
  layers.forEach(number);
  const order = (layer, neighbours) => {
    const key = new Map();
    for (const id of layer) {
      const ns = neighbours.get(id);
      if (ns.length === 0) {
        key.set(id, row.get(id));
        continue;
      }
      let sum = 0;
      for (const x of ns) sum += row.get(x);
      key.set(id, sum / ns.length);
    }
    // Stable: ties keep their current order.
    layer.sort((a, b) => key.get(a) - key.get(b) || row.get(a) - row.get(b));
    number(layer);
  };
  for (let sweep = 0; sweep < 4; sweep++) {
    for (let l = 1; l < layers.length; l++) order(layers[l], preds);
    for (let l = layers.length - 2; l >= 0; l--) order(layers[l], succs);
  }

  const at = new Map();
  layers.forEach((layer, l) => layer.forEach((id, r) => at.set(id, { layer: l, row: r })));
  return { layers, at, preds };
}
