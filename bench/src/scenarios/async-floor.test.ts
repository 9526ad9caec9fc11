import { Pool } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withClient } from "@gw/testkit";
import { chatRequestBody } from "../targets";
import { startFixedUpstream, type FixedUpstream } from "../upstream/fixed-upstream";
import { startDurableFloor, type DurableFloor } from "./async-durable-floor";
import { measureAsyncFloor } from "./async-floor";

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

describe("measureAsyncFloor", () => {
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

describe("startDurableFloor", () => {
  async function withFloor(key: string, use: (floor: DurableFloor, pool: Pool) => Promise<void>): Promise<void> {
    const floor = await startDurableFloor(chat(key));
    const pool = new Pool(floor.target.origin);
    try {
      await use(floor, pool);
    } finally {
      await pool.close();
      await floor.stop();
    }
  }
  const send = async (pool: Pool, method: "POST" | "GET", path: string, body?: Buffer, headers: Record<string, string> = {}) => {
    const res = await pool.request({ method, path, headers, body });
    return { status: res.statusCode, json: (await res.body.json()) as { id: string; status: string; result?: unknown } };
  };

  it("when jobs are created, then each is a committed row and a stored message, and a waiting poll gets the upstream's answer", async () => {
    await withFloor("sk-floor", async (floor, pool) => {
      const before = upstream.answered;
      const created = await Promise.all(Array.from({ length: 5 }, () => send(pool, "POST", floor.target.path, floor.target.body)));
      expect(created.map((c) => [c.status, c.json.status])).toEqual(Array(5).fill([202, "queued"]));
      for (const { json } of created) {
        const done = await send(pool, "GET", `${floor.target.path}/${json.id}`, undefined, { prefer: "wait=10" });
        expect(done).toMatchObject({ status: 200, json: { id: json.id, status: "completed", result: { object: "chat.completion" } } });
      }
      expect(upstream.answered - before).toBe(5);
      const rows = await withClient(floor.databaseUrl, (c) =>
        c.query<{ id: string; status: string }>('SELECT id, status FROM floor_jobs ORDER BY id COLLATE "C"'),
      );
      expect(rows.rows).toEqual(created.map((c) => ({ id: c.json.id, status: "completed" })).sort((a, b) => (a.id < b.id ? -1 : 1)));
      expect((await send(pool, "GET", `${floor.target.path}/job_none`)).status).toBe(404);
      expect(Object.keys(floor.processes).sort()).toEqual(["floor: hop", "floor: jobs", "floor: worker"]);
    });
  });

  it("when the upstream refuses the worker's call, then the job is failed, not completed", async () => {
    await withFloor("wrong", async (floor, pool) => {
      const { json } = await send(pool, "POST", floor.target.path, floor.target.body);
      const done = await send(pool, "GET", `${floor.target.path}/${json.id}`, undefined, { prefer: "wait=10" });
      expect(done.json.status).toBe("failed");
    });
  });
});
