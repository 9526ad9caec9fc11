import { createServer, IncomingMessage, ServerResponse, type RequestListener, type Server, type ServerOptions } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { Express } from "express";
import { GatewayError } from "@gw/errors";
import { errorFormatFor } from "./app";
import { newRequestId } from "./request-id";

export interface RunningServer {
  server: Server;
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests and streams finish for up to graceMs, then cuts. */
  close(graceMs?: number): Promise<void>;
}

export interface HttpServerOptions {
  /**
   * Answer `Expect: 100-continue` only when the app asks for the body (acceptBody), not at once as
   * node does by default: a client then sends no body for a request refused at the door.
   */
  deferContinue?: boolean;
  /** Tests shorten the limits (and how often node checks them, every 30 s by default). */
  timeouts?: Partial<Record<keyof typeof serverTimeouts | "connectionsCheckingInterval", number>>;
}

/**
 * Time limits on what a client sends: the request line and headers within 30 s, the whole request
 * (body included) within 5 minutes, an idle keep-alive connection closed after 65 s (above the 60 s
 * idle timeout of common load balancers, so they close first). A body trickled in a byte at a time
 * is cut at the request limit. The answer has no limit: streams run for as long as the model writes.
 */
export const serverTimeouts = { headersTimeout: 30_000, requestTimeout: 300_000, keepAliveTimeout: 65_000 } as const;

export async function startHttpServer(handler: RequestListener, port: number, host = "0.0.0.0", options: HttpServerOptions = {}): Promise<RunningServer> {
  const classes = isExpressApp(handler) ? expressMessageClasses(handler) : {};
  const server = createServer({ ...serverTimeouts, ...options.timeouts, ...classes }, handler);
  // Streams can run for minutes; an answer's time limits are the route's business, not the socket's.
  server.timeout = 0;
  server.on("clientError", answerClientError);
  if (options.deferContinue) {
    server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
      (req as IncomingMessage & { [continuePending]?: boolean })[continuePending] = true;
      handler(req, res);
    });
  }
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const shownHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  // Shutdown paths overlap (signal + test teardown): every caller waits for the same drain.
  let closing: Promise<void> | undefined;
  return { server, port: bound, url: `http://${shownHost}:${bound}`, close: (graceMs) => (closing ??= closeServer(server, graceMs)) };
}

async function closeServer(server: Server, graceMs = 10_000): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // Keep-alive sockets that go idle while we drain would hold close() open: shut them as they idle.
  server.closeIdleConnections();
  const sweeper = setInterval(() => server.closeIdleConnections(), 100);
  const deadline = setTimeout(() => server.closeAllConnections(), graceMs);
  try {
    await closed;
  } finally {
    clearInterval(sweeper);
    clearTimeout(deadline);
  }
}

/**
 * A request node's parser refuses (an unknown method, bytes a request line may not hold, headers over
 * 16 KiB, a request past its time) never reaches the app; node's own answer is a bare status line.
 * This one is the gateway's: the OpenAI error envelope and an x-request-id, as on every other answer.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "The request line and headers are larger than 16 KiB"]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout", "The request was not received in time"]
        : [400, "Bad Request", "The request is not valid HTTP/1.1"];
  const requestId = newRequestId();
  // The route's envelope when the request line can still be read (Anthropic's on /v1/messages).
  const format = errorFormatFor(requestTarget((err as { rawPacket?: unknown }).rawPacket));
  const body = JSON.stringify(new GatewayError("invalid_request", message, { status }).toEnvelope(format, requestId));
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** The target of a raw request line (`METHOD /path HTTP/1.1`), or "" when there is none to read. */
function requestTarget(raw: unknown): string {
  if (!Buffer.isBuffer(raw)) return "";
  const line = raw.subarray(0, Math.min(raw.length, 8_192)).toString("latin1").split("\r\n", 1)[0] ?? "";
  return line.split(" ")[1] ?? "";
}

const continuePending = Symbol("continuePending");

/** Tells a client waiting on `Expect: 100-continue` to send its body; a no-op for any other request. */
export function acceptBody(req: IncomingMessage, res: ServerResponse): void {
  const pending = req as IncomingMessage & { [continuePending]?: boolean };
  if (!pending[continuePending]) return;
  pending[continuePending] = false;
  res.writeContinue();
}

function isExpressApp(handler: RequestListener): handler is RequestListener & Express {
  const app = handler as Partial<Express>;
  return typeof app.request === "object" && typeof app.response === "object" && typeof app.use === "function";
}

/**
 * Express's `app.handle` moves every request and response onto the app's own prototypes
 * (`Object.setPrototypeOf`), and V8 then runs node's HTTP code on those objects far slower, costing
 * more CPU per request than express's routing itself (expressjs/express#5998; figures in
 * bench/README.md). Here the server builds them from classes whose prototypes already are the
 * app's, so that call finds nothing to change. The app's request and response methods are copied
 * onto the classes' prototypes, which then become `app.request` and `app.response`; an app that also
 * serves through another server (supertest) still works, as express moves those objects onto the
 * same prototypes.
 */
function expressMessageClasses(app: Express): Pick<ServerOptions, "IncomingMessage" | "ServerResponse"> {
  class AppRequest extends IncomingMessage {}
  class AppResponse extends ServerResponse {}
  adoptChain(AppRequest.prototype, app.request, IncomingMessage.prototype);
  adoptChain(AppResponse.prototype, app.response, ServerResponse.prototype);
  app.request = AppRequest.prototype as Express["request"];
  app.response = AppResponse.prototype as unknown as Express["response"];
  return { IncomingMessage: AppRequest, ServerResponse: AppResponse as unknown as typeof ServerResponse };
}

/**
 * Copies every property on `from`'s prototype chain below `base` onto `target`, nearest last; never
 * `constructor` (an app served twice has a class prototype in its chain).
 */
function adoptChain(target: object, from: object, base: object): void {
  const chain: object[] = [];
  for (let link = from; link !== base; link = Object.getPrototypeOf(link) as object) {
    if (link === null) throw new Error("express's request or response does not derive from node's");
    chain.push(link);
  }
  for (const link of chain.reverse()) {
    const { constructor: _ignored, ...descriptors } = Object.getOwnPropertyDescriptors(link);
    Object.defineProperties(target, descriptors);
  }
}
