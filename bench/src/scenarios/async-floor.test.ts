import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatRequestBody } from "../targets";
import { startFixedUpstream, type FixedUpstream } from "../upstream/fixed-upstream";
import { measureAsyncFloor } from "./async-floor";

describe("measureAsyncFloor", () => {
  let upstream: FixedUpstream;
  beforeAll(async () => {
    upstream = await startFixedUpstream({ apiKey: "sk-floor" });
  });
  afterAll(() => upstream.close());
  const chat = (key: string) => ({
    origin: new URL(upstream.url).origin,
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: chatRequestBody,
  });

  it("when the floor is measured, then every create and every job's upstream call reaches the upstream, and every rate is read", async () => {
    const direct = chat("sk-floor");
    const before = upstream.answered;
    const floor = await measureAsyncFloor(direct, 4, 20);
    // A warm-up round of creates, three tries of creates, three tries of jobs (a create through the
    // hops and a direct call each); the polls read the upstream's stats, which it does not count.
    expect(upstream.answered - before).toBe(20 + 3 * 20 + 3 * 20 * 2);
    expect(floor.createsPerSecond).toBeGreaterThan(0);
    expect(floor.jobsPerSecond).toBeGreaterThan(0);
    expect(floor.pollsPerSecond).toBeGreaterThan(0);
    expect([floor.createsPerSecond, floor.jobsPerSecond, floor.pollsPerSecond].every(Number.isFinite)).toBe(true);
  });

  it("when the upstream refuses the key, then the measure fails rather than timing refusals", async () => {
    await expect(measureAsyncFloor(chat("wrong"), 2, 4)).rejects.toThrow(/POST answered 401/);
  });
});
