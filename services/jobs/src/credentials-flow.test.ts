import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import { internalHeaders, providerCredentialSealing, type Identity, type JobWork } from "@gw/contracts";
import { createPgliteDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { CredentialsReader, credentialsTransitPurpose, Sealer, signIdentity } from "@gw/service-kit";
import { createJobsService, type JobsService } from "./service";

/**
 * A workspace's own provider credentials through the jobs service: sealed at rest while the job can
 * run, the current ones in each attempt's work (after a rotation or a removal through ingress), and
 * gone once the job has finished.
 */
const SECRET = "jobs-credentials-flow-internal-secret";
const MASTER = "jobs-credentials-flow-master-key-0123456789";
const logger = createLogger({ service: "jobs-credentials-test", level: "silent" });
const limits = { requests_per_minute: 1, tokens_per_minute: 1 };
const gateway = GatewayConfig.parse({
  providers: { openai: { kind: "openai", base_url: "http://127.0.0.1:9/v1" } },
  models: { emb: { type: "embedding", routes: [{ provider: "openai", model: "text-embedding-3-small" }] } },
  plans: { plus: limits, pro: limits, enterprise: limits },
});
const timings = { attemptTimeoutMs: 60_000, maxAttempts: 5, retentionMs: 3_600_000, sweepIntervalMs: 100 };
const identity: Identity = { workspace_id: "ws_byok", key_id: "key_1", plan: "enterprise", models: [["*"]], tools: [] };
const atRest = new Sealer(MASTER, providerCredentialSealing.purpose);
const reader = new CredentialsReader(SECRET);

interface Running {
  db: Db;
  bus: Bus;
  service: JobsService;
  url: string;
  works: JobWork[];
}

async function start(masterKey: string | undefined): Promise<Running> {
  const db = await createPgliteDb();
  const bus = createInProcessBus({ logger });
  const service = createJobsService({
    db,
    bus,
    logger,
    gateway,
    settings: { host: "127.0.0.1", port: 0, internalSecret: SECRET, bodyLimitBytes: 1 << 20, timings, masterKey, ingressAdminUrl: () => "http://127.0.0.1:9" },
  });
  const { url } = await service.start();
  const works: JobWork[] = [];
  await bus.consume("jobs.work.inference", { durable: "inference" }, async (work) => void works.push(work));
  return { db, bus, service, url, works };
}

async function stop(running: Running | undefined): Promise<void> {
  if (!running) return;
  await running.service.stop();
  await running.bus.close();
  await running.db.close();
}

const createJob = (running: Running, credentials: Record<string, string>) =>
  fetch(`${running.url}/v1/async/embeddings`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      [internalHeaders.identity]: signIdentity(identity, SECRET),
      [internalHeaders.credentials]: new Sealer(SECRET, credentialsTransitPurpose).seal(JSON.stringify(credentials), identity.workspace_id),
    },
    body: JSON.stringify({ model: "emb", input: "x" }),
  });

async function until<T>(fn: () => T | undefined | Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const workOf = (running: Running, id: string, attempt: number) =>
  until(() => running.works.find((w) => w.job_id === id && w.attempt === attempt), `attempt ${attempt}`);
const credentialsIn = (work: JobWork) => reader.read(work.credentials, work.identity.workspace_id);
const rowOf = async (running: Running, id: string) =>
  (await running.db.query<{ credentials: string | null; status: string }>("SELECT credentials::text AS credentials, status FROM jobs.jobs WHERE id = $1", [id]))
    .rows[0];
const expire = (running: Running, id: string) => running.db.query("UPDATE jobs.jobs SET deadline_at = now() - interval '1 second' WHERE id = $1", [id]);

describe("when the jobs service has a master key", () => {
  let gw: Running;
  beforeAll(async () => {
    gw = await start(MASTER);
  }, 60_000);
  afterAll(() => stop(gw));

  it("then a job's credentials are sealed at rest, each retry carries the workspace's current ones, and a finished job keeps none", async () => {
    const created = await createJob(gw, { openai: "sk-byok-first" });
    expect(created.status).toBe(202);
    const { id } = (await created.json()) as { id: string };
    expect(credentialsIn(await workOf(gw, id, 1))).toEqual({ openai: "sk-byok-first" });
    const stored = (await rowOf(gw, id))?.credentials ?? "";
    expect(stored).toMatch(/"sealed": "v1\./);
    expect(stored).not.toContain("sk-byok");

    // Rotated through ingress while the first attempt runs: the retry carries the new key.
    const context = providerCredentialSealing.context(identity.workspace_id, "openai");
    await gw.bus.enqueue(
      "credentials.changed",
      { workspace_id: identity.workspace_id, provider: "openai", sealed: atRest.seal("sk-byok-rotated", context), version: 10 },
      { msgId: "rotate" },
    );
    await until(async () => ((await rowOf(gw, id))?.credentials?.includes('"version": 10') ? true : undefined), "the rotation");
    await expire(gw, id);
    expect(credentialsIn(await workOf(gw, id, 2))).toEqual({ openai: "sk-byok-rotated" });

    // Deleted: the next attempt runs as a new call would, with none of the workspace's own.
    await gw.bus.enqueue("credentials.changed", { workspace_id: identity.workspace_id, provider: "openai", version: 11 }, { msgId: "delete" });
    await until(async () => ((await rowOf(gw, id))?.credentials?.includes('"version": 11') ? true : undefined), "the removal");
    await expire(gw, id);
    expect((await workOf(gw, id, 3)).credentials).toBeUndefined();

    await gw.bus.enqueue("jobs.events", { job_id: id, status: "completed", attempt: 3, at: Date.now(), result: { data: [] } }, { msgId: `${id}:3:final` });
    expect(await until(async () => ((await rowOf(gw, id))?.status === "completed" ? rowOf(gw, id) : undefined), "completion")).toEqual({
      status: "completed",
      credentials: null,
    });
  }, 30_000);

  it("then a kept credential that does not open fails the job with a clear error instead of running it with the platform's", async () => {
    const created = await createJob(gw, { openai: "sk-byok-other" });
    const { id } = (await created.json()) as { id: string };
    await workOf(gw, id, 1);
    // A value sealed under another master key (ingress's differs from this service's).
    const foreign = new Sealer("some-other-master-key-0123456789abcdef", providerCredentialSealing.purpose).seal("sk-x", `${identity.workspace_id}/openai`);
    await gw.bus.enqueue(
      "credentials.changed",
      { workspace_id: identity.workspace_id, provider: "openai", sealed: foreign, version: 20 },
      { msgId: "foreign" },
    );
    await until(async () => ((await rowOf(gw, id))?.credentials?.includes('"version": 20') ? true : undefined), "the change");
    await expire(gw, id);
    const failed = await until(async () => {
      const res = await fetch(`${gw.url}/v1/async/embeddings/${id}`, { headers: { [internalHeaders.identity]: signIdentity(identity, SECRET) } });
      const body = (await res.json()) as { status: string; error?: { error: { message: string } } };
      return body.status === "failed" ? body : undefined;
    }, "the failure");
    expect(failed.error?.error.message).toMatch(/could not be opened.*never used in its place/);
    expect(gw.works.filter((w) => w.job_id === id).map((w) => w.attempt)).toEqual([1]);
    expect((await rowOf(gw, id))?.credentials).toBeNull();
  }, 30_000);
});

describe("when the jobs service has no master key", () => {
  let gw: Running;
  beforeAll(async () => {
    gw = await start(undefined);
  }, 60_000);
  afterAll(() => stop(gw));

  it("then a job that comes with credentials is refused with a 503 naming GATEWAY_MASTER_KEY, and nothing is stored", async () => {
    const res = await createJob(gw, { openai: "sk-byok" });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("GATEWAY_MASTER_KEY");
    expect((await gw.db.query("SELECT id FROM jobs.jobs")).rowCount).toBe(0);
  });
});
