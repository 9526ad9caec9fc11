import { Pool } from "undici";
import { microsSince } from "./histogram";

/** One HTTP request the benchmark repeats: the same bytes every time. */
export interface RequestTarget {
  /** Origin only (scheme, host, port); `path` carries the rest. */
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface TimedClient {
  /** Sends the request, reads the whole answer, returns the elapsed µs; throws unless it was a 200. */
  timed(): Promise<number>;
  /** Sends the request once and returns the answer, for checks outside the timed loop. */
  once(): Promise<Answer>;
  close(): Promise<void>;
}

/**
 * A keep-alive undici pool per target. Every path goes through the same client code, so the
 * client's own cost is equal on both sides and cancels out of the difference.
 */
export function createTimedClient(target: RequestTarget, connections = 1): TimedClient {
  const pool = new Pool(target.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const options = { method: "POST", path: target.path, headers: target.headers, body: target.body } as const;

  return {
    async timed() {
      const started = process.hrtime.bigint();
      const res = await pool.request(options);
      // The whole body counts: a gateway that answers headers early but buffers the body is slow.
      const body = await res.body.arrayBuffer();
      const elapsed = microsSince(started);
      if (res.statusCode !== 200) {
        throw new Error(`${target.origin}${target.path} answered ${res.statusCode}: ${Buffer.from(body).toString("utf8").slice(0, 500)}`);
      }
      return elapsed;
    },
    async once() {
      const res = await pool.request(options);
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
    },
    close: () => pool.close(),
  };
}
