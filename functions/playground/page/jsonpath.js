// Finds where a value sits in JSON text, so that a problem's path
// (workflow.nodes[2].needs[0]) can put the cursor on it.

// parsePath splits "a.b[2].c" into ["a", "b", 2, "c"].
export function parsePath(path) {
  const out = [];
  const re = /([^.[\]]+)|\[(\d+)\]/g;
  let m;
  while ((m = re.exec(path)) !== null) {
    out.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  }
  return out;
}

// locate returns {start, end, found} for the value at path (an array of
// keys and indexes) in text: the deepest part of the path that exists, so
// that a problem about a missing field lands on its parent object.
// Invalid JSON yields the position where parsing stopped.
export function locate(text, path) {
  let i = 0;
  let best = { start: 0, end: 0, depth: -1 };
  const ws = () => {
    while (i < text.length && " \t\r\n".includes(text[i])) i++;
  };
  const fail = () => {
    throw new Error("syntax");
  };
  const str = () => {
    const s = i;
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text[i] === "\\") i++;
      i++;
    }
    if (i >= text.length) fail();
    i++;
    return JSON.parse(text.slice(s, i));
  };
  // value parses one value; depth is how much of path it matches.
  const value = (depth) => {
    ws();
    const start = i;
    const matched = depth >= 0;
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") i++;
      else {
        for (;;) {
          ws();
          if (text[i] !== '"') fail();
          const key = str();
          ws();
          if (text[i] !== ":") fail();
          i++;
          const hit = matched && depth < path.length && path[depth] === key;
          value(hit ? depth + 1 : -1);
          ws();
          if (text[i] === ",") { i++; continue; }
          if (text[i] === "}") { i++; break; }
          fail();
        }
      }
    } else if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") i++;
      else {
        for (let k = 0; ; k++) {
          const hit = matched && depth < path.length && path[depth] === k;
          value(hit ? depth + 1 : -1);
          ws();
          if (text[i] === ",") { i++; continue; }
          if (text[i] === "]") { i++; break; }
          fail();
        }
      }
    } else if (c === '"') {
      str();
    } else {
      const m = /^-?[0-9.eE+-]+|^true|^false|^null/.exec(text.slice(i, i + 64));
      if (!m) fail();
      i += m[0].length;
    }
    if (matched && depth > best.depth) best = { start, end: i, depth };
  };
  try {
    value(0);
  } catch {
    return { start: i, end: i, found: false };
  }
  return { start: best.start, end: best.end, found: best.depth === path.length };
}
