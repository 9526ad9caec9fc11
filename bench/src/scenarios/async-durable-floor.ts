import { fileURLToPath } from "node:url";
import { AckPolicy, connect, DiscardPolicy, RetentionPolicy, StorageType } from "nats";
import { createTestDatabase, testNatsUrl, testRedisUrl, uniqueNamespace, withClient } from "@gw/testkit";
import type { RequestTarget } from "../http-client";
import { spawnListening, type ListeningChild } from "../listening-child";

export interface DurableFloor {
  /** Where its creates go (POST) and its polls (GET `{path}/{id}`), with the chat request to send. */
  target: RequestTarget;
  /** Its own database, where the jobs' rows are. */
  databaseUrl: string;
  /** Its processes, for their CPU. */
  processes: Record<string, number>;
  stop(): Promise<void>;
}

/**
 * The shape of an async job with its durable steps and nothing else of the gateway: a bare stack
 * hop with a Redis round trip (ingress's shape), the `jobs` floor process (a row written per create
 * and a JetStream publish, the finished event's row written, polls answered) and a `worker` that
 * consumes the work, calls the upstream and publishes the event (see floor/durable-floor-main.ts).
 * Its own database and stream on the benchmark's Postgres and NATS, dropped at `stop`.
 */
export async function startDurableFloor(direct: RequestTarget): Promise<DurableFloor> {
  const entry = (name: string) => fileURLToPath(new URL(`../floor/${name}`, import.meta.url));
  const database = await createTestDatabase();
  const namespace = uniqueNamespace();
  const natsUrl = await testNatsUrl();
  const children: ListeningChild[] = [];
  const nc = await connect({ servers: natsUrl });
  const stop = async () => {
    await Promise.all(children.map((c) => c.stop()));
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(namespace).catch(() => undefined);
    await nc.close();
    await database.drop();
  };
  try {
    await withClient(database.url, (c) =>
      c.query(`CREATE TABLE floor_jobs (
        id text PRIMARY KEY, status text NOT NULL, request bytea NOT NULL, result jsonb,
        created_at timestamptz NOT NULL DEFAULT now(), completed_at timestamptz)`),
    );
    // As the gateway's work stream: stored on disk, each message removed once acked.
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({
      name: namespace,
      subjects: [`${namespace}.work`, `${namespace}.events`],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      duplicate_window: 120_000_000_000,
    });
    for (const [durable, subject] of [
      ["jobs", `${namespace}.events`],
      ["worker", `${namespace}.work`],
    ] as const) {
      await jsm.consumers.add(namespace, { durable_name: durable, filter_subject: subject, ack_policy: AckPolicy.Explicit, ack_wait: 30_000_000_000 });
    }
    const state = { FLOOR_DATABASE_URL: database.url, FLOOR_NATS_URL: natsUrl, FLOOR_NAMESPACE: namespace };
    const worker = await spawnListening(entry("durable-floor-main.ts"), {
      ...state,
      FLOOR_KIND: "worker",
      FLOOR_TARGET: direct.origin,
      FLOOR_TARGET_PATH: direct.path,
      FLOOR_TARGET_HEADERS: JSON.stringify(direct.headers),
    });
    children.push(worker);
    const jobs = await spawnListening(entry("durable-floor-main.ts"), { ...state, FLOOR_KIND: "jobs" });
    children.push(jobs);
    const hop = await spawnListening(entry("floor-proxy-main.ts"), { FLOOR_KIND: "stack", FLOOR_TARGET: jobs.url, FLOOR_REDIS_URL: await testRedisUrl() });
    children.push(hop);
    return {
      target: { ...direct, origin: hop.url, path: "/floor/jobs" },
      databaseUrl: database.url,
      processes: { "floor: hop": hop.pid, "floor: jobs": jobs.pid, "floor: worker": worker.pid },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
