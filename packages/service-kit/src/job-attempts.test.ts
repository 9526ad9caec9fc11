import { afterEach, describe, expect, it } from "vitest";
import { createInProcessBus } from "@gw/bus";
import type { JobWork } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { JobAttempts } from "./job-attempts";

const work = (job_id: string, attempt: number): JobWork => ({
  job_id,
  route: "embeddings",
  identity: { workspace_id: "ws", key_id: "key", plan: "pro", models: [["*"]], tools: [] },
  request: { format: "json", body: {} },
  attempt,
});

const bus = createInProcessBus({ logger: createLogger({ service: "t", level: "silent" }) });
/** Broadcasts reach subscribers on a later turn, as they would off the wire. */
const cancel = async (job_id: string, attempt: number) => {
  await bus.publish("jobs.cancel", { job_id, attempt });
  await new Promise((resolve) => setImmediate(resolve));
};
let attempts: JobAttempts | undefined;
afterEach(() => attempts?.stop());

describe("when the jobs service supersedes an attempt a worker runs", () => {
  it("then that attempt and earlier ones abort, a newer one and other jobs run on", async () => {
    attempts = new JobAttempts(bus);
    const first = attempts.begin(work("job_a", 1));
    const second = attempts.begin(work("job_a", 2));
    const other = attempts.begin(work("job_b", 1));
    await cancel("job_a", 1);
    expect(first.signal.aborted).toBe(true);
    expect(first.superseded).toBe(true);
    expect(second.signal.aborted).toBe(false);
    expect(other.signal.aborted).toBe(false);
    await cancel("job_a", 2);
    expect(second.superseded).toBe(true);
    for (const a of [first, second, other]) a.end();
  });

  it("then a superseded attempt handed over later (a redelivery) starts aborted, and an older cancel does not undo a newer one", async () => {
    attempts = new JobAttempts(bus);
    await cancel("job_c", 2);
    await cancel("job_c", 1);
    expect(attempts.begin(work("job_c", 1)).superseded).toBe(true);
    expect(attempts.begin(work("job_c", 2)).superseded).toBe(true);
    expect(attempts.begin(work("job_c", 3)).superseded).toBe(false);
  });

  it("then an attempt that ended is no longer aborted by a late cancel, and a stopped tracker hears nothing", async () => {
    attempts = new JobAttempts(bus);
    const done = attempts.begin(work("job_d", 1));
    done.end();
    await cancel("job_d", 1);
    expect(done.signal.aborted).toBe(false);
    attempts.stop();
    await cancel("job_e", 1);
    expect(attempts.isSuperseded("job_e", 1)).toBe(false);
  });
});
