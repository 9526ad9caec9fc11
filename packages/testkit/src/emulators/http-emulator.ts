import { createServer } from "node:http";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as the emulator received it. */
export interface RecordedRequest {
  method: string;
  /** URL path without the query string, e.g. "/v1/chat/completions". */
  path: string;
  query: Record<string, string>;
  /** Node's lower-cased header map. */
  headers: IncomingHttpHeaders;
  /** Parsed JSON; the raw text when the body is not JSON; a Buffer for multipart; undefined when empty. */
  body: unknown;
  /** The client went away before the answer was complete (abort, timeout). */
  aborted: boolean;
  /** Status the emulator answered with; undefined while unanswered (or for `hang`). */
  status?: number;
  /** SSE events written so far; lets a test see that a stream stopped early. */
  chunksWritten: number;
}

/**
 * A scripted answer, consumed by the next request that passes authentication (FIFO).
 * - `status` (default 200) with `body`: sent as-is (JSON-encoded unless a string).
 * - non-2xx `status` without `body`: the provider's real error envelope for that status.
 * - 2xx without `body`: the normal emulated answer, shaped by the other fields.
 * - `hang`: never answers (the request is still recorded; a client abort marks it `aborted`).
 * - `dropAfterChunks: n`: a stream is cut (socket closed, no terminator) after n SSE events; a JSON
 *   answer is cut before its headers when n is 0, else after the headers and half the body.
 */
export interface ScriptStep {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Wait before the first byte of the answer. */
  delayMs?: number;
  hang?: true;
  dropAfterChunks?: number;
  /** Pause between SSE events for this answer (overrides the emulator's `chunkDelayMs`). */
  chunkDelayMs?: number;
  /** Speech: the audio's length in bytes, as a long uncompressed (wav, pcm) answer runs to tens of MB. */
  audioBytes?: number;
}

export interface EmulatorOptions {
  /** Requests must carry this key, else the provider's real 401 answer. */
  apiKey?: string;
  /** Default pause between SSE events (0: write the whole stream at once, fastest). */
  chunkDelayMs?: number;
  /** Listen port (default: a free one). */
  port?: number;
  /** Keep `requests` (default true); a long benchmark may turn it off to save memory. */
  record?: boolean;
}

export interface UpstreamEmulator {
  /** Base URL to hand to the SDK as `baseURL`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  script(...steps: ScriptStep[]): void;
  /** Forgets recorded requests and pending script steps. */
  reset(): void;
  close(): Promise<void>;
}

/** What a provider plugs into the shared server. */
export interface ProviderSpec {
  /** Path prefix of the public URL ("/v1" for OpenAI, "" for Anthropic). */
  basePath: string;
  /** Headers sent on every answer (request ids, rate limits). */
  commonHeaders(): Record<string, string>;
  /** Auth and protocol checks; returns true when it has already answered. */
  precheck(ex: Exchange): boolean;
  /** Body for a scripted error status that came without one. */
  errorBody(status: number, ex: Exchange): unknown;
  handle(ex: Exchange): void | Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One request/response pair, with the write helpers that apply the scripted step. */
export class Exchange {
  private dropped = false;
  readonly headers: Record<string, string>;

  /** Set once the request passed the provider's checks (they answer unscripted). */
  step: ScriptStep | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly record: RecordedRequest,
    private readonly defaultChunkDelayMs: number,
    commonHeaders: Record<string, string>,
  ) {
    this.headers = commonHeaders;
  }

  /** True once nothing more should be written (client left, or the socket was dropped on purpose). */
  get closed(): boolean {
    return this.dropped || this.record.aborted || this.res.destroyed;
  }

  get droppedOnPurpose(): boolean {
    return this.dropped;
  }

  json(status: number, body: unknown, extra?: Record<string, string>): void {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    const headers: Record<string, string> = {
      ...this.headers,
      "content-type": "application/json",
      ...extra,
      ...this.step?.headers,
    };
    const drop = this.step?.dropAfterChunks;
    if (drop === 0) return this.drop();
    this.record.status = status;
    headers["content-length"] = String(Buffer.byteLength(text));
    this.res.writeHead(status, headers);
    if (drop === undefined) {
      this.res.end(text);
      return;
    }
    this.res.write(text.slice(0, Math.floor(text.length / 2)));
    this.drop();
  }

  /** Writes pre-framed SSE events, honouring chunk delay, drop and client abort. */
  async sse(status: number, frames: readonly string[]): Promise<void> {
    const headers = {
      ...this.headers,
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      ...this.step?.headers,
    };
    const drop = this.step?.dropAfterChunks;
    const delay = this.step?.chunkDelayMs ?? this.defaultChunkDelayMs;
    this.record.status = status;
    this.res.writeHead(status, headers);
    this.res.flushHeaders();
    for (let i = 0; i < frames.length; i++) {
      if (drop === i) return this.drop();
      if (this.closed) return;
      const ok = this.res.write(frames[i] as string);
      this.record.chunksWritten++;
      if (delay > 0 && i < frames.length - 1) await sleep(delay);
      else if (!ok) await this.drained();
    }
    if (drop !== undefined && drop >= frames.length) return this.drop();
    if (!this.closed) this.res.end();
  }

  /** Waits for backpressure to clear (or the peer to leave), without leaving listeners behind. */
  private drained(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.res.off("drain", done);
        this.res.off("close", done);
        resolve();
      };
      this.res.on("drain", done);
      this.res.on("close", done);
    });
  }

  /** Abrupt close: data already written is flushed, then the connection ends without a terminator. */
  private drop(): void {
    this.dropped = true;
    const socket = this.res.socket;
    if (!socket) return;
    socket.end(() => socket.destroy());
  }
}

export async function startEmulator(spec: ProviderSpec, opts: EmulatorOptions = {}): Promise<UpstreamEmulator> {
  const requests: RecordedRequest[] = [];
  let queue: ScriptStep[] = [];
  let closing = false;
  const keep = opts.record ?? true;
  const chunkDelay = opts.chunkDelayMs ?? 0;

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const url = new URL(req.url ?? "/", "http://emulator");
    const record: RecordedRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
      aborted: false,
      chunksWritten: 0,
    };
    if (keep) requests.push(record);
    const ex = new Exchange(req, res, record, chunkDelay, spec.commonHeaders());
    res.on("close", () => {
      // 'close' before the response finished means the peer went away, unless we cut it ourselves.
      if (!res.writableFinished && !closing && !ex.droppedOnPurpose) record.aborted = true;
    });
    if (spec.precheck(ex)) return;
    const step = queue.shift();
    ex.step = step;
    if (step?.hang) return;
    if (step?.delayMs) await sleep(step.delayMs);
    if (ex.closed) return;
    const status = step?.status ?? 200;
    if (step && (step.body !== undefined || status < 200 || status > 299)) {
      ex.json(status, step.body !== undefined ? step.body : spec.errorBody(status, ex));
      return;
    }
    await spec.handle(ex);
  }

  const server = createServer({ keepAlive: true }, (req, res) => {
    onRequest(req, res).catch((err: unknown) => {
      // A bug in the emulator must surface in the test, not as a hung request.
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(`emulator error: ${err instanceof Error ? err.stack : String(err)}`);
      } else {
        res.destroy();
      }
    });
  });
  // Benchmarks reuse connections; Node's 5 s default would close idle sockets between phases.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}${spec.basePath}`,
    requests,
    script(...steps) {
      queue.push(...steps);
    },
    reset() {
      requests.length = 0;
      queue = [];
    },
    close() {
      closing = true;
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // hung and keep-alive sockets would otherwise block close
      });
    },
  };
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (chunks.length === 0) return undefined;
  // Multipart bodies carry binary files, which a utf-8 round trip would corrupt: kept as bytes.
  if (/^multipart\//i.test(req.headers["content-type"] ?? "")) return Buffer.concat(chunks);
  const text = Buffer.concat(chunks).toString("utf8");
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Marker for a body that arrived but was not valid JSON (providers answer 400 to it). */
export function isUnparsedBody(body: unknown): body is string {
  return typeof body === "string";
}
