import { request, type Agent, type IncomingHttpHeaders } from "node:http";
import { connect, type Socket } from "node:net";

/**
 * One request exactly as given: node:http sends the target, method and header bytes unchanged
 * (fetch would normalise `//`, `..` and methods, and refuse some), on a connection of its own so a
 * case that breaks a connection cannot affect the next.
 */
export interface RawRequest {
  method: string;
  /** Path and query as they go on the wire (latin1). */
  target: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Streams this many bytes of one repeated chunk instead of `body`, never holding them whole. */
  streamed?: { bytes: number; chunked: boolean };
  timeoutMs: number;
  /** A keep-alive agent for floods; by default every request has a connection of its own. */
  agent?: Agent;
  /** The client goes away early (see FuzzCase.cut); the answer is then "no-answer". */
  cut?: "after-head" | "mid-body" | "after-first-byte";
}

export type RawAnswer =
  | { kind: "answer"; status: number; headers: IncomingHttpHeaders; body: Buffer; ms: number }
  | { kind: "no-answer"; reason: string; ms: number };

/** Response bytes kept for inspection; a longer answer (an SSE stream, audio) is read and dropped. */
const KEEP_BYTES = 256 * 1024;
const WRITE_BYTES = 256 * 1024;
const CHUNK = Buffer.alloc(WRITE_BYTES, "a");
Buffer.from('{"model":"gpt","x":"').copy(CHUNK);

/** Bodies above this go out on a plain socket, written the careful way (see `sendOnSocket`). */
const LARGE_BODY = 64 * 1024;

export function send(base: { host: string; port: number }, req: RawRequest): Promise<RawAnswer> {
  if (req.streamed) return sendOnSocket(base, req, { ...req.streamed, bytesAt: (_from, n) => CHUNK.subarray(0, n) });
  const body = req.body;
  if (req.cut) return cutShort(base, req, body ?? Buffer.alloc(0), req.cut);
  if (body && body.length > LARGE_BODY)
    return sendOnSocket(base, req, { bytes: body.length, chunked: false, bytesAt: (from, n) => body.subarray(from, from + n) });
  return sendWhole(base, req);
}

function sendWhole(base: { host: string; port: number }, req: RawRequest): Promise<RawAnswer> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise<RawAnswer>((resolve) => {
    let settled = false;
    const finish = (answer: RawAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    const headers: Record<string, string> = { ...req.headers };
    if (req.body && !("content-length" in headers)) headers["content-length"] = String(req.body.length);
    let client: ReturnType<typeof request>;
    try {
      client = request({
        host: base.host,
        port: base.port,
        method: req.method,
        path: req.target,
        headers,
        agent: req.agent ?? false,
        setHost: !("host" in headers),
      });
    } catch (err) {
      // Node's client refuses to send it (an invalid header byte): a generator bug, shown as such.
      finish({ kind: "no-answer", reason: `client refused to send: ${(err as Error).message}`, ms: 0 });
      return;
    }
    const timer = setTimeout(() => {
      finish({ kind: "no-answer", reason: `no answer within ${req.timeoutMs} ms`, ms: elapsed() });
      client.destroy();
    }, req.timeoutMs);
    client.on("response", (res) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      res.on("data", (chunk: Buffer) => {
        if (kept < KEEP_BYTES) chunks.push(chunk);
        kept += chunk.length;
      });
      const done = () => {
        finish({ kind: "answer", status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms: elapsed() });
        client.destroy();
      };
      res.on("end", done);
      // The answer's head arrived but its body was cut: still an answer, with what came.
      res.on("error", done);
      res.on("aborted", done);
    });
    client.on("error", (err) =>
      finish({ kind: "no-answer", reason: `connection failed: ${(err as NodeJS.ErrnoException).code ?? err.message}`, ms: elapsed() }),
    );
    client.end(req.body);
  });
}

/** A client that goes away early, on a plain socket so that the moment is exact. */
function cutShort(base: { host: string; port: number }, req: RawRequest, body: Buffer, cut: NonNullable<RawRequest["cut"]>): Promise<RawAnswer> {
  const started = performance.now();
  return new Promise<RawAnswer>((resolve) => {
    const socket = connect(base.port, base.host);
    const gone = () => {
      socket.destroy();
      resolve({ kind: "no-answer", reason: `the client went away ${cut}`, ms: Math.round(performance.now() - started) });
    };
    socket.on("error", gone);
    const head = [`${req.method} ${req.target} HTTP/1.1`, `host: ${base.host}:${base.port}`, `content-length: ${body.length}`];
    for (const [name, value] of Object.entries(req.headers)) head.push(`${name}: ${value}`);
    const bytes = Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1");
    if (cut === "after-head") socket.write(bytes, gone);
    else if (cut === "mid-body") socket.write(Buffer.concat([bytes, body.subarray(0, Math.floor(body.length / 2))]), gone);
    else {
      socket.once("data", gone);
      socket.once("close", gone);
      socket.write(Buffer.concat([bytes, body]));
    }
  });
}

/** A body to write: its length, whether it goes chunked, and its bytes from an offset. */
interface BodySource {
  bytes: number;
  chunked: boolean;
  bytesAt(from: number, n: number): Buffer;
}

/**
 * A large body, on a plain socket: a server may answer before the body is through and close, and
 * node's client then reports the write's EPIPE instead of the answer it had received. Here the
 * answer is read from the bytes that came, whatever happens to the upload.
 */
function sendOnSocket(base: { host: string; port: number }, req: RawRequest, source: BodySource): Promise<RawAnswer> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise<RawAnswer>((resolve) => {
    const received: Buffer[] = [];
    let writeError: string | undefined;
    const socket = connect(base.port, base.host);
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const answer = parseAnswer(Buffer.concat(received));
      resolve(
        answer
          ? { kind: "answer", ...answer, ms: elapsed() }
          : { kind: "no-answer", reason: writeError ? `connection failed: ${writeError}` : "closed without an answer", ms: elapsed() },
      );
    };
    const timer = setTimeout(finish, req.timeoutMs);
    socket.on("data", (chunk: Buffer) => {
      received.push(chunk);
      if (parseAnswer(Buffer.concat(received))?.complete) finish();
    });
    socket.on("error", (err: NodeJS.ErrnoException) => (writeError = err.code ?? err.message));
    socket.on("close", finish);
    const head = [`${req.method} ${req.target} HTTP/1.1`, "connection: close"];
    if (!("host" in req.headers)) head.push(`host: ${base.host}:${base.port}`);
    for (const [name, value] of Object.entries(req.headers)) head.push(`${name}: ${value}`);
    head.push(source.chunked ? "transfer-encoding: chunked" : `content-length: ${source.bytes}`);
    socket.write(Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1"));
    void pump(socket, source, () => received.length === 0);
  });
}

/**
 * Writes the body from the shared chunk with backpressure, until done or an answer has begun. Like
 * curl, it looks for an answer before each write (a turn of the event loop lets a pending read in):
 * a server that answers early and closes would otherwise have its answer lost to the write's EPIPE.
 */
async function pump(socket: Socket, source: BodySource, keepGoing: () => boolean): Promise<void> {
  let sent = 0;
  while (sent < source.bytes && keepGoing() && !socket.destroyed) {
    await new Promise((resolve) => setImmediate(resolve));
    if (!keepGoing() || socket.destroyed) return;
    const n = Math.min(source.bytes - sent, WRITE_BYTES);
    const data = source.bytesAt(sent, n);
    sent += n;
    const ok = source.chunked ? socket.write(Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), data, Buffer.from("\r\n")])) : socket.write(data);
    if (!ok) await drainOrClose(socket);
  }
  if (sent === source.bytes && source.chunked && !socket.destroyed) socket.write("0\r\n\r\n");
}

/** Waits for the socket to drain or close, leaving no listener behind (a large body waits many times). */
function drainOrClose(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off("drain", done).off("close", done);
      resolve();
    };
    socket.once("drain", done).once("close", done);
  });
}

/** An HTTP/1.1 answer from its raw bytes: head, and a body by content-length (what error answers carry). */
function parseAnswer(bytes: Buffer): { status: number; headers: IncomingHttpHeaders; body: Buffer; complete: boolean } | undefined {
  const end = bytes.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine, ...lines] = bytes.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "")?.[1]);
  if (!status) return undefined;
  const headers: IncomingHttpHeaders = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = bytes.subarray(end + 4);
  const length = Number(headers["content-length"]);
  const complete = Number.isFinite(length) && body.length >= length;
  return { status, headers, body: complete ? body.subarray(0, length) : body, complete };
}
