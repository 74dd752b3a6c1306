// Reads an NDJSON body as it arrives: fetch gives the stream, and
// EventSource could neither POST nor send an Authorization header.

// readLines calls onLine(text) for every complete line of the response
// body as it streams in, and resolves when the body ends. A last line
// without its newline is passed too (the stream broke mid-line: the
// caller's parse of it fails and says so).
export async function readLines(body, onLine) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    let start = 0;
    for (;;) {
      const nl = pending.indexOf("\n", start);
      if (nl < 0) break;
      const line = pending.slice(start, nl);
      start = nl + 1;
      if (line !== "") onLine(line);
    }
    pending = pending.slice(start);
  }
  pending += decoder.decode();
  if (pending !== "") onLine(pending);
}
