import { randomUUID } from "node:crypto";
import express from "express";
import { connect, headers, type JetStreamClient, type JsMsg } from "nats";
import pg from "pg";
import { Pool as HttpPool } from "undici";
import { GroupCommit } from "@gw/jobs";
import { startHttpServer } from "@gw/service-kit";

/**
 * The least a durable async job does, with nothing of the gateway in it, as the processes of the
 * async scenario's durable floor. FLOOR_KIND picks the process:
 * - `jobs`: a POST writes the job's row (one INSERT for the creates that arrive together) and
 *   publishes its work to JetStream, then answers 202 `{id}`; a consumer of the finished events
 *   writes their rows (one UPDATE for the events that arrive together) and acks them after the
 *   commit; a GET `…/{id}` answers a finished job from memory and any other from its row, and with
 *   `Prefer: wait` holds until the job's row says it finished.
 * - `worker`: consumes the work, makes the upstream call (FLOOR_TARGET's origin, FLOOR_TARGET_PATH,
 *   FLOOR_TARGET_HEADERS as JSON, the request as the work carries it), publishes the finished event with the answer, then acks the work.
 * Both durable steps of each side are the gateway's (a committed row, a stored and acked message);
 * no keys, limits, schemas, signatures, usage records or settlements. FLOOR_DATABASE_URL,
 * FLOOR_NATS_URL and FLOOR_NAMESPACE (its stream and subjects) are the state; the bench creates
 * the table and the stream. Prints `{"url": …}` (jobs) or `{"url": ""}` (worker) once ready.
 */
const kind = process.env.FLOOR_KIND;
const namespace = process.env.FLOOR_NAMESPACE ?? "";
const WORK = `${namespace}.work`;
const EVENTS = `${namespace}.events`;
/** Work messages one worker runs at once, as inference's consumer allows. */
const WORKER_SLOTS = 64;

interface Finished {
  status: string;
  result: string;
}

const nc = await connect({ servers: process.env.FLOOR_NATS_URL });
const js = nc.jetstream();
const stop = kind === "jobs" ? await startJobs(js) : kind === "worker" ? await startWorker(js) : undefined;
if (!stop) throw new Error(`FLOOR_KIND must be jobs or worker, not ${kind}`);
process.once(
  "SIGTERM",
  () =>
    void stop()
      .then(() => nc.drain())
      .then(() => process.exit(0)),
);

async function startJobs(jetstream: JetStreamClient): Promise<() => Promise<void>> {
  const db = new pg.Pool({ connectionString: process.env.FLOOR_DATABASE_URL, max: 4 });
  const finished = new Map<string, Finished>();
  const waiters = new Map<string, Array<() => void>>();
  const inserts = new GroupCommit<{ id: string; request: Buffer }, void>(async (rows) => {
    await db.query("INSERT INTO floor_jobs (id, status, request) SELECT id, 'queued', request FROM unnest($1::text[], $2::bytea[]) AS r(id, request)", [
      rows.map((r) => r.id),
      rows.map((r) => r.request),
    ]);
    return rows.map(() => undefined);
  });
  const updates = new GroupCommit<{ id: string } & Finished, void>(async (rows) => {
    await db.query(
      "UPDATE floor_jobs j SET status = u.status, result = u.result::jsonb, completed_at = now() FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, status, result) WHERE j.id = u.id",
      [rows.map((r) => r.id), rows.map((r) => r.status), rows.map((r) => r.result)],
    );
    for (const r of rows) {
      finished.set(r.id, { status: r.status, result: r.result });
      for (const wake of waiters.get(r.id) ?? []) wake();
      waiters.delete(r.id);
    }
    return rows.map(() => undefined);
  });

  const app = express();
  app.disable("x-powered-by");
  app.use(express.raw({ type: () => true, limit: "1mb" }));
  app.post(/.*/, async (req, res) => {
    const id = `job_${randomUUID()}`;
    const request = req.body as Buffer;
    await inserts.run({ id, request });
    await jetstream.publish(WORK, request, { msgID: id, headers: headersWith(id) });
    res.status(202).json({ id, status: "queued" });
  });
  app.get(/.*/, async (req, res) => {
    const id = req.path.slice(req.path.lastIndexOf("/") + 1);
    const wait = /wait=(\d+)/.exec(req.get("prefer") ?? "");
    if (wait && !finished.has(id)) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Number(wait[1]) * 1000);
        const wake = () => {
          clearTimeout(timer);
          resolve();
        };
        waiters.set(id, [...(waiters.get(id) ?? []), wake]);
      });
    }
    const done = finished.get(id);
    if (done) {
      res.type("application/json").send(`{"id":${JSON.stringify(id)},"status":${JSON.stringify(done.status)},"result":${done.result}}`);
      return;
    }
    const { rows } = await db.query<{ status: string }>("SELECT status FROM floor_jobs WHERE id = $1", [id]);
    if (rows.length === 0) res.status(404).json({ error: "no such job" });
    else res.json({ id, status: rows[0]!.status });
  });

  const consumer = await jetstream.consumers.get(namespace, "jobs");
  const events = await consumer.consume({ max_messages: 256 });
  void (async () => {
    for await (const m of events) {
      const { id, status, result } = m.json<{ id: string } & Finished>();
      void updates.run({ id, status, result }).then(
        () => m.ack(),
        () => m.nak(),
      );
    }
  })();

  const server = await startHttpServer(app, 0, "127.0.0.1");
  process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
  return async () => {
    await events.close();
    await server.close();
    await db.end();
  };
}

async function startWorker(jetstream: JetStreamClient): Promise<() => Promise<void>> {
  const target = new URL(process.env.FLOOR_TARGET ?? "");
  const upstream = new HttpPool(target.origin, { connections: WORKER_SLOTS, keepAliveTimeout: 60_000 });
  const path = process.env.FLOOR_TARGET_PATH ?? "/";
  const upstreamHeaders = JSON.parse(process.env.FLOOR_TARGET_HEADERS ?? "{}") as Record<string, string>;
  const consumer = await jetstream.consumers.get(namespace, "worker");
  const work = await consumer.consume({ max_messages: WORKER_SLOTS });
  const run = async (m: JsMsg): Promise<void> => {
    const id = m.headers?.get("job-id") ?? "";
    const answer = await upstream.request({ method: "POST", path, headers: upstreamHeaders, body: m.data });
    const result = await answer.body.text();
    const status = answer.statusCode === 200 ? "completed" : "failed";
    await jetstream.publish(EVENTS, JSON.stringify({ id, status, result }), { msgID: `${id}:done` });
    m.ack();
  };
  void (async () => {
    for await (const m of work) void run(m).catch(() => m.nak());
  })();
  process.stdout.write(`${JSON.stringify({ url: "" })}\n`);
  return async () => {
    await work.close();
    await upstream.close();
  };
}

function headersWith(id: string) {
  const h = headers();
  h.set("job-id", id);
  return h;
}
