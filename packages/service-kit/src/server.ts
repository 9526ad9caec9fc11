import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface RunningServer {
  server: Server;
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests and streams finish for up to graceMs, then cuts. */
  close(graceMs?: number): Promise<void>;
}

export async function startHttpServer(handler: RequestListener, port: number, host = "0.0.0.0"): Promise<RunningServer> {
  const server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 66_000, requestTimeout: 0 }, handler);
  // Streams can run for minutes; per-request timeouts are the route's business, not the socket's.
  server.timeout = 0;
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
