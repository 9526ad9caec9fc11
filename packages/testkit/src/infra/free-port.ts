import { createServer } from "node:net";

/** Below Linux's default ephemeral range (32768–60999), which outgoing connections draw from. */
const PORT_RANGE = { first: 20_000, last: 32_000 } as const;
const handedOut = new Set<number>();

/**
 * A port for a process that will listen on it later. An ephemeral port (listen on 0) can be taken in
 * between as the local end of any outgoing connection (to Postgres, Redis, NATS), which fails the
 * service's listen with EADDRINUSE; so the port is drawn at random from below that range, and
 * checked free by binding it.
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = PORT_RANGE.first + Math.floor(Math.random() * (PORT_RANGE.last - PORT_RANGE.first));
    if (handedOut.has(port)) continue;
    handedOut.add(port); // before the check, so concurrent callers never pick the same one
    if (await canListen(port)) return port;
    handedOut.delete(port);
  }
  throw new Error(`no free port between ${PORT_RANGE.first} and ${PORT_RANGE.last} after 50 tries`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}
