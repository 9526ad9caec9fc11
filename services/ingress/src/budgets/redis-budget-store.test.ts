import type { RedisClientType } from "redis";
import { describe, expect, it } from "vitest";
import { RedisBudgetStore } from "./redis-budget-store";

describe("RedisBudgetStore's time limit", () => {
  it("when Redis does not answer, then each call fails after the limit, and one that answers in time is untouched", async () => {
    let answer: ((v: unknown) => void) | undefined;
    let calls = 0;
    const client = {
      evalSha: () => {
        calls += 1;
        // The first call hangs for good; the second is answered when the test says.
        return calls === 1 ? new Promise(() => {}) : new Promise((resolve) => (answer = resolve));
      },
    } as unknown as RedisClientType;
    const store = new RedisBudgetStore(client, 50);
    const scope = { key: "k", limitNano: 10, hard: true, alertNano: undefined };
    const started = Date.now();
    const timing = { at: started, ttlMs: 1_000, holdUntil: started + 1_000 };
    const hung = store.admit([scope], 1, [0], timing).catch((err: Error) => err);
    const answered = store.admit([scope], 1, [0], timing);
    answer?.([0, 0]);
    expect(await answered).toEqual({ kind: "admitted", used: [0] });
    const err = await hung;
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain("did not answer within 50 ms");
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    await store.close();
  });
});
