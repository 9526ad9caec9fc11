import { afterEach, describe, expect, it, vi } from "vitest";
import { createInProcessBus } from "@gw/bus";
import { createLogger } from "@gw/logger";
import { settledSoon } from "@gw/testkit";
import { FinishWaiters, MAX_POLL_WAIT_SECONDS, preferredWaitSeconds } from "./finish-waiters";

const logger = createLogger({ service: "t", level: "silent" });
const bus = createInProcessBus({ logger });
/** A wait long enough that a test relying on it would time out rather than pass. */
const FOREVER_MS = 600_000;
const replicas: FinishWaiters[] = [];
const replica = () => {
  const waiters = new FinishWaiters(bus, logger);
  replicas.push(waiters);
  return waiters;
};
/** A registration that must be granted. */
function hold(waiters: FinishWaiters, jobId: string, workspaceId = "ws_1") {
  const wait = waiters.register(jobId, workspaceId);
  if (!wait) throw new Error(`${jobId} was not let wait`);
  return wait;
}
afterEach(() => {
  for (const waiters of replicas.splice(0)) waiters.stop();
  vi.restoreAllMocks();
});

describe("when a poll waits for its job to finish", () => {
  it("then a finish applied by another replica wakes it, and another job's finish does not", async () => {
    const [a, b] = [replica(), replica()];
    const wait = hold(a, "job_1");
    const waiting = wait.until(FOREVER_MS);
    b.announce("job_2");
    expect(await settledSoon(waiting)).toBe(false);
    b.announce("job_1");
    await waiting;
    wait.end();
    expect(a.size).toBe(0);
  });

  it("then a finish between registering and waiting (the poll was reading the row) is not missed", async () => {
    const waiters = replica();
    const wait = hold(waiters, "job_1");
    waiters.announce("job_1");
    expect(await settledSoon(wait.until(FOREVER_MS))).toBe(true);
    wait.end();
  });

  it("then it answers at the end of its wait when nothing finishes, and at once when its client goes", async () => {
    const waiters = replica();
    const short = hold(waiters, "job_1");
    await short.until(20);
    short.end();
    const gone = hold(waiters, "job_1");
    const waiting = gone.until(FOREVER_MS);
    gone.end();
    expect(await settledSoon(waiting)).toBe(true);
    expect(waiters.size).toBe(0);
  });

  it("then stopping answers every waiting poll, and one that registers afterwards does not wait", async () => {
    const waiters = replica();
    const waits = ["job_1", "job_2"].map((id) => hold(waiters, id));
    const waiting = Promise.all(waits.map((w) => w.until(FOREVER_MS)));
    waiters.stop();
    expect(await settledSoon(waiting)).toBe(true);
    expect(await settledSoon(hold(waiters, "job_3").until(FOREVER_MS))).toBe(true);
  });

  it("then the finishes of one turn of the event loop go to the other replicas in one message", async () => {
    const waiters = replica();
    const publish = vi.spyOn(bus, "publish");
    for (const id of ["job_1", "job_2", "job_3"]) waiters.announce(id);
    await new Promise((resolve) => setImmediate(resolve));
    expect(publish.mock.calls).toEqual([["jobs.finished", { job_ids: ["job_1", "job_2", "job_3"] }]]);
  });
});

describe("when a workspace holds many polls at once", () => {
  it("then past its share, or past the process's, a poll does not wait, until held ones end", () => {
    const waiters = new FinishWaiters(bus, logger, { perWorkspace: 2, total: 3 });
    replicas.push(waiters);
    const first = hold(waiters, "job_1", "ws_a");
    hold(waiters, "job_2", "ws_a");
    expect(waiters.register("job_3", "ws_a")).toBeUndefined();
    hold(waiters, "job_4", "ws_b");
    expect(waiters.register("job_5", "ws_c")).toBeUndefined();
    expect(waiters.size).toBe(3);
    first.end();
    first.end();
    expect(waiters.size).toBe(2);
    expect(waiters.register("job_5", "ws_c")).toBeDefined();
    expect(waiters.register("job_6", "ws_a")).toBeUndefined();
  });
});

describe("when a poll says how long it prefers to wait", () => {
  it.each([
    ["wait=5", 5],
    ["respond-async, wait=6", 6],
    ["handling=lenient, wait = 7", 7],
    ["handling=lenient; wait=7", 0],
    ["wait=12345678901234567890", MAX_POLL_WAIT_SECONDS],
    ['wait="3"', 3],
    [`wait=${MAX_POLL_WAIT_SECONDS + 100}`, MAX_POLL_WAIT_SECONDS],
    ["wait=0", 0],
    ["wait=-1", 0],
    ["wait=2.5", 0],
    ["waited=3", 0],
    ["handling=strict", 0],
    [undefined, 0],
  ])("then %s means %d seconds", (prefer, seconds) => {
    expect(preferredWaitSeconds(prefer)).toBe(seconds);
  });
});
