import { createServer } from "node:net";

/** Below Linux's default ephemeral range (32768–60999), which outgoing connections draw from. */
const PORT_RANGE = { first: 20_000, last: 32_000 } as const;
const SLICE = 1_000;
const SLICES = Math.floor((PORT_RANGE.last - PORT_RANGE.first) / SLICE);

/**
 * Test files run in several worker processes at once, and a port checked free by one can be checked
 * free by another before either listens on it. So each worker draws from its own slice of the range
 * (vitest numbers its workers 1…maxWorkers; other processes use their pid), in order from a random
 * start, which hands a port out again only after the whole slice has been.
 */
export function portSlice(slot: number): { first: number; last: number } {
  const first = PORT_RANGE.first + (slot % SLICES) * SLICE;
  return { first, last: first + SLICE - 1 };
}

const slot = Number(process.env.VITEST_POOL_ID);
const sliceStart = portSlice(Number.isInteger(slot) ? slot : process.pid).first;
let cursor = Math.floor(Math.random() * SLICE);

/**
 * A port for a process that will listen on it later. An ephemeral port (listen on 0) can be taken in
 * between as the local end of any outgoing connection (to Postgres, Redis, NATS), which fails the
 * service's listen with EADDRINUSE; so the port comes from below that range, checked free by binding it.
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = sliceStart + (cursor++ % SLICE); // taken before the check, so concurrent callers never share one
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port between ${sliceStart} and ${sliceStart + SLICE - 1} after 50 tries`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}
