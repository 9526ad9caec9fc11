import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { chatCompletionBody, chatCompletionFrames } from "./payloads";

export interface FixedUpstreamOptions {
  /** Requests must carry `Authorization: Bearer <apiKey>`, like a real provider. */
  apiKey: string;
  /** Content deltas of a streamed answer (default 20); the role, finish and usage chunks come on top. */
  streamPieces?: number;
  /** Pause between SSE frames of a streamed answer, ms (default 0: all at once). */
  frameIntervalMs?: number;
  port?: number;
}

export interface FixedUpstream {
  /** OpenAI-style base URL, ending in /v1. */
  readonly url: string;
  /** Chat requests answered so far: lets a scenario check that every gateway call reached us. */
  readonly answered: number;
  close(): Promise<void>;
}

/** JSON bodies are compact and the gateway re-serialises, so this substring is exact for both paths. */
const streamMarker = Buffer.from('"stream":true');
/** `stream_options.include_usage`, looked for only once a request is known to stream. */
const includeUsageMarker = Buffer.from('"include_usage":true');
const chatPath = "/v1/chat/completions";
/** Not part of any provider's API: lets a benchmark in another process read `answered`. */
export const statsPath = "/_bench/stats";

/**
 * A zero-delay OpenAI-compatible upstream for POST /v1/chat/completions. Every answer is a
 * pre-serialised Buffer with fixed headers, so its per-request cost is the HTTP parsing alone.
 * The testkit emulator is unsuitable here: it parses the URL and JSON body, records the request,
 * and builds and serialises a fresh answer every time.
 */
export async function startFixedUpstream(options: FixedUpstreamOptions): Promise<FixedUpstream> {
  const expectedAuth = `Bearer ${options.apiKey}`;
  const json = chatCompletionBody();
  const jsonHeaders = { "content-type": "application/json", "content-length": String(json.length), "openai-processing-ms": "0" };
  const pieces = options.streamPieces ?? 20;
  const framesWithUsage = chatCompletionFrames(pieces, true);
  const framesWithoutUsage = chatCompletionFrames(pieces, false);
  const frameInterval = options.frameIntervalMs ?? 0;
  const sseHeaders = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };
  const unauthorized = Buffer.from(
    JSON.stringify({ error: { message: "Incorrect API key provided.", type: "invalid_request_error", param: null, code: "invalid_api_key" } }),
  );
  const notFound = Buffer.from(JSON.stringify({ error: { message: "Not found", type: "invalid_request_error", param: null, code: null } }));
  let answered = 0;

  const answer = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    if (req.headers.authorization !== expectedAuth) return send(res, 401, unauthorized);
    answered++;
    if (!body.includes(streamMarker)) {
      res.writeHead(200, jsonHeaders);
      res.end(json);
      return;
    }
    const frames = body.includes(includeUsageMarker) ? framesWithUsage : framesWithoutUsage;
    res.writeHead(200, sseHeaders);
    if (frameInterval <= 0) {
      for (const frame of frames) res.write(frame);
      res.end();
      return;
    }
    writePaced(res, frames, frameInterval);
  };

  const server = createServer({ keepAlive: true }, (req, res) => {
    if (req.method === "GET" && req.url === statsPath) {
      return send(res, 200, Buffer.from(JSON.stringify({ answered })));
    }
    if (req.method !== "POST" || req.url !== chatPath) {
      req.resume();
      return send(res, 404, notFound);
    }
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => answer(req, res, parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts)));
  });
  // Keep idle client connections across pauses between scenarios (Node's default is 5 s).
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    get answered() {
      return answered;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { "content-type": "application/json", "content-length": String(body.length) });
  res.end(body);
}

/** One frame now, then one per interval; a client that leaves stops the timer. */
function writePaced(res: ServerResponse, frames: readonly Buffer[], intervalMs: number): void {
  let next = 0;
  const writeNext = () => {
    if (res.destroyed) return clearInterval(timer);
    res.write(frames[next++] as Buffer);
    if (next >= frames.length) {
      clearInterval(timer);
      res.end();
    }
  };
  const timer = setInterval(writeNext, intervalMs);
  res.once("close", () => clearInterval(timer));
  writeNext();
}
