import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import { testRedisUrl } from "@gw/testkit";
import type { RequestTarget } from "../http-client";
import { spawnListening, type ListeningChild } from "../listening-child";
import { statsPath } from "../upstream/fixed-upstream";

const TRIES = 3;

export interface AsyncFloor {
  /** Creates' shape alone: a POST through two bare stack hops, the first making a Redis round trip. */
  createsPerSecond: number;
  /** A job's least work: that POST, the upstream call, and one poll through the same two hops. */
  jobsPerSecond: number;
  /** Polls' shape alone: a GET through the two hops, answered small, as a finished job's poll is. */
  pollsPerSecond: number;
}

/**
 * The bare shape of an async job on this machine, measured with the async scenario's own clients:
 * what `created/s`, `created and completed/s` and polls/s could reach if the gateway did nothing but what
 * its design makes every job do, with none of its own work. A create passes ingress and jobs (two
 * hops of the fixed stack, express and http-proxy-middleware, and one Redis round trip for the
 * limits); a job also makes its upstream call and is read by at least one poll over the same hops.
 * No Postgres, no JetStream, no worker: each real job costs more than this, never less.
 */
export async function measureAsyncFloor(direct: RequestTarget, clients: number, items: number): Promise<AsyncFloor> {
  const entry = fileURLToPath(new URL("../floor/floor-proxy-main.ts", import.meta.url));
  const hops: ListeningChild[] = [];
  const pools: Pool[] = [];
  try {
    hops.push(await spawnListening(entry, { FLOOR_KIND: "stack", FLOOR_TARGET: direct.origin }));
    hops.push(await spawnListening(entry, { FLOOR_KIND: "stack", FLOOR_TARGET: hops[0]!.url, FLOOR_REDIS_URL: await testRedisUrl() }));
    const pool = (origin: string) => {
      const created = new Pool(origin, { connections: clients, pipelining: 1, keepAliveTimeout: 60_000 });
      pools.push(created);
      return created;
    };
    const chain = pool(hops[1]!.url);
    const upstream = pool(direct.origin);
    const send = async (to: Pool, method: "POST" | "GET"): Promise<void> => {
      const res = await to.request(method === "POST" ? { method, path: direct.path, headers: direct.headers, body: direct.body } : { method, path: statsPath });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`async floor: ${method} answered ${res.statusCode}`);
    };
    const rate = async (count: number, one: () => Promise<void>): Promise<number> => {
      const started = process.hrtime.bigint();
      await byClients(clients, count, one);
      return (count / Number(process.hrtime.bigint() - started)) * 1e9;
    };
    const create = () => send(chain, "POST");
    const job = async () => {
      await create();
      await send(upstream, "POST");
      await send(chain, "GET");
    };
    // A ceiling is what the stack can reach: the best of a few tries, as a shared machine's
    // neighbours only ever take from it.
    const best = async (one: () => Promise<void>) => {
      let top = 0;
      for (let i = 0; i < TRIES; i++) top = Math.max(top, await rate(items, one));
      return top;
    };
    await rate(items, create);
    return { createsPerSecond: await best(create), jobsPerSecond: await best(job), pollsPerSecond: await best(() => send(chain, "GET")) };
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    await Promise.all(hops.map((h) => h.stop()));
  }
}

/** `count` calls of `one`, made by `clients` clients at once, each starting its next as its last ends. */
export async function byClients(clients: number, count: number, one: () => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < count) {
        next++;
        await one();
      }
    }),
  );
}
