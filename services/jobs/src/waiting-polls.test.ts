import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus } from "@gw/bus";
import { internalHeaders, type Identity } from "@gw/contracts";
import { createPgliteDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { signIdentity } from "@gw/service-kit";
import { until } from "@gw/testkit";
import { researchRoute } from "./async-routes";
import { JobStore } from "./job-store";
import type { JobsService } from "./service";
import { testJobsService } from "./testing/jobs-service";

/**
 * Polls that wait for their job (`Prefer: wait=N`) through the jobs service's HTTP routes: woken by
 * a finish another replica applied, by the sweep failing the job, let go when the client leaves or
 * the service stops. The other replica is played by a store and a `jobs.finished` broadcast.
 */
const logger = createLogger({ service: "jobs-test", level: "silent" });
const SECRET = "w".repeat(32);
const ATTEMPT_MS = 300;
/** Sooner than an 8 s wait ends by itself, so a poll that was never woken fails. */
const HELD_WITHIN_MS = 6_000;
const identity: Identity = { workspace_id: "ws_w", key_id: "key_w", plan: "pro", models: [["*"]], tools: ["webtool"] };
let db: Db;
let n = 0;

beforeAll(async () => {
  db = await createPgliteDb();
});
afterAll(() => db?.close());

const bus = createInProcessBus({ logger });
let service: JobsService | undefined;
let url = "";
afterEach(async () => {
  await service?.stop();
  service = undefined;
});

async function start(timings: { maxAttempts: number; sweepIntervalMs: number }) {
  service = testJobsService({ db, bus, internalSecret: SECRET, timings: { attemptTimeoutMs: ATTEMPT_MS, ...timings } });
  url = (await service.start()).url;
  return service;
}

const store = () => new JobStore(db, ATTEMPT_MS, 3_600_000);
async function job(route = "embeddings", who = identity): Promise<string> {
  const outcome = await store().create({
    id: `job_${String(++n).padStart(32, "w")}`,
    route,
    identity: who,
    request: { format: "json", body: { model: "m", input: "x" } },
    requestHash: "h",
  });
  await store().markDispatched(outcome.job.id, 1);
  return outcome.job.id;
}

const poll = (path: string, prefer: string, signal?: AbortSignal, who = identity) =>
  fetch(`${url}${path}`, { headers: { prefer, [internalHeaders.identity]: signIdentity(who, SECRET) }, signal });

describe("when a poll waits for its job", () => {
  it("then it answers once another replica applies the finish and says so on the bus", async () => {
    const jobs = await start({ maxAttempts: 3, sweepIntervalMs: 60_000 });
    const id = await job();
    const started = Date.now();
    const answer = poll(`/v1/async/embeddings/${id}`, "wait=8");
    await until(() => jobs.heldPolls() === 1, "the poll to be held", HELD_WITHIN_MS);
    await store().apply({ job_id: id, status: "completed", attempt: 1, at: 1, result: { data: [] } });
    await bus.publish("jobs.finished", { job_ids: [id] });
    const res = await answer;
    // Woken, not let go at the end of its 8 s.
    expect(Date.now() - started).toBeLessThan(7_000);
    expect(res.headers.get("preference-applied")).toBe("wait=8");
    expect(await res.json()).toMatchObject({ id, status: "completed", result: { data: [] } });
    expect(jobs.heldPolls()).toBe(0);
  });

  it("then the sweep failing the job out of attempts answers it", async () => {
    const jobs = await start({ maxAttempts: 1, sweepIntervalMs: 50 });
    const id = await job();
    const started = Date.now();
    const res = await poll(`/v1/async/embeddings/${id}`, "wait=8");
    expect(Date.now() - started).toBeLessThan(7_000);
    expect(await res.json()).toMatchObject({ id, status: "failed", error: { error: { code: "upstream_timeout" } } });
    expect(jobs.heldPolls()).toBe(0);
  });

  it("then a client that leaves stops its wait, and stopping the service answers the others", async () => {
    const jobs = await start({ maxAttempts: 3, sweepIntervalMs: 60_000 });
    const id = await job();
    const leaving = new AbortController();
    const gone = poll(`/v1/async/embeddings/${id}`, "wait=8", leaving.signal).catch((err: unknown) => err);
    const staying = poll(`/v1/async/embeddings/${id}`, "wait=8");
    await until(() => jobs.heldPolls() === 2, "both polls to be held", HELD_WITHIN_MS);
    leaving.abort();
    expect(await gone).toBeInstanceOf(Error);
    await until(() => jobs.heldPolls() === 1, "the left poll to stop waiting", HELD_WITHIN_MS);
    const stopping = jobs.stop();
    service = undefined;
    const res = await staying;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id, status: "queued" });
    await stopping;
  });

  it("then a research task's poll waits only for the key that started it", async () => {
    const jobs = await start({ maxAttempts: 3, sweepIntervalMs: 60_000 });
    const id = await job(researchRoute);
    const otherKey = { ...identity, key_id: "key_other" };
    const refused = await poll(`/v1/tools/webtool/research/${id}`, "wait=8", undefined, otherKey);
    expect(refused.status).toBe(404);
    expect(refused.headers.get("preference-applied")).toBeNull();
    const answer = poll(`/v1/tools/webtool/research/${id}`, "wait=8");
    await until(() => jobs.heldPolls() === 1, "the poll to be held", HELD_WITHIN_MS);
    await store().apply({ job_id: id, status: "completed", attempt: 1, at: 1, result: { content: "found" } });
    await bus.publish("jobs.finished", { job_ids: [id] });
    const res = await answer;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ request_id: id, status: "completed", content: "found" });
  });
});
