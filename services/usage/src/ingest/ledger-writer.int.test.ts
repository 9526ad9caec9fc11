import { createPgDb, type Db, runMigrations } from "@gw/db";
import { createTestDatabase, type TestDatabase } from "@gw/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RecordPartitions } from "../partitions";
import { usageMigrations } from "../service";
import { freshWorkspace, logger, record, testPricer } from "../testing/harness";
import { toLedgerRow } from "./ledger-row";
import { LedgerWriter } from "./ledger-writer";

/**
 * Two writers on a real Postgres at once (PGlite has one connection, so its statements never
 * overlap): one batch written plainly, an overlapping one skipping duplicates, as when a
 * redelivery's window has begun on one writer or replica and not on another.
 */
describe("LedgerWriter, two batches at once", () => {
  let database: TestDatabase;
  let db: Db;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = createPgDb({ url: database.url, applicationName: "gw-usage-writer-test" });
    await runMigrations(db, { schema: "usage", dir: usageMigrations, logger });
  }, 60_000);
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  it("when a plain batch and a skipping one share records, then neither fails or deadlocks, and each record is written and counted once", async () => {
    const pricer = testPricer();
    for (let trial = 0; trial < 8; trial++) {
      const ws = freshWorkspace();
      // Many roll-up keys (one per key and minute's hour) and records shared by both batches.
      const rows = Array.from(
        { length: 1_200 },
        (_, i) => toLedgerRow(record({ workspace_id: ws, key_id: `key_${i % 40}`, started_at: Date.UTC(2025, 0, 12, i % 24, i % 60) }), pricer).row!,
      );
      const first = rows.slice(0, 700);
      const second = [...rows.slice(600)].reverse();
      const partitions = new RecordPartitions(db);
      const [a, b] = await Promise.all([
        new LedgerWriter(db, partitions).write(first),
        new LedgerWriter(db, partitions).write(second, { skipDuplicates: true }),
      ]);
      expect(a.inserted.length + b.inserted.length).toBe(1_200);
      expect(a.duplicates + b.duplicates).toBe(100);
      const sum = async (sql: string) => Number((await db.query<{ n: string }>(sql, [ws])).rows[0]?.n);
      expect(await sum("SELECT count(*) AS n FROM usage.records WHERE workspace_id = $1")).toBe(1_200);
      expect(await sum("SELECT sum(requests) AS n FROM usage.hourly WHERE workspace_id = $1")).toBe(1_200);
      expect(await sum("SELECT sum(requests) AS n FROM usage.hourly_models WHERE workspace_id = $1")).toBe(1_200);
    }
  }, 60_000);

  it("when durations go as whole microseconds, then each one read back is the double the record held, by either statement", async () => {
    const pricer = testPricer();
    const ws = freshWorkspace();
    // Recorded to the microsecond, as ingress rounds them; one past 2^31 µs (35 minutes).
    const durations = [0, 0.001, 0.2, 0.812, 1.25, 12.345, 999.999, 1234.567, 86_400_000.123];
    const rows = durations.map(
      (ms, i) =>
        toLedgerRow(
          record({
            workspace_id: ws,
            started_at: Date.UTC(2025, 0, 13, 1, i),
            duration_ms: ms,
            outcome: { provider: "openai", attempts: 1, upstream_ms: ms, ...(i % 2 ? { ttft_ms: ms } : {}) },
          }),
          pricer,
        ).row!,
    );
    const partitions = new RecordPartitions(db);
    await new LedgerWriter(db, partitions).write(rows.slice(0, 5));
    await new LedgerWriter(db, partitions).write(rows.slice(3), { skipDuplicates: true });
    const { rows: read } = await db.query<{ request_id: string; duration_ms: number; upstream_ms: number; ttft_ms: number | null }>(
      "SELECT request_id, duration_ms, upstream_ms, ttft_ms FROM usage.records WHERE workspace_id = $1",
      [ws],
    );
    const byId = new Map(read.map((r) => [r.request_id, r]));
    expect(read).toHaveLength(durations.length);
    for (const row of rows) {
      const o = row.record.outcome;
      expect(byId.get(row.record.request_id)).toEqual({
        request_id: row.record.request_id,
        duration_ms: row.record.duration_ms,
        upstream_ms: o?.upstream_ms,
        ttft_ms: o?.ttft_ms ?? null,
      });
    }
  });

  it("when a name holds a lone UTF-16 surrogate, then its record is written with U+FFFD in its place and the batch's others as they came", async () => {
    const pricer = testPricer();
    const ws = freshWorkspace();
    // JSON escapes a lone surrogate as \udXXX, which Postgres's jsonb refuses; a pair is a character.
    const models = ["gpt-test", "half \ud83d of a pair", "whole \ud83d\ude00 pair", "low \ude00 alone", "escaped \\ud83d text"];
    const rows = models.map((model, i) => toLedgerRow(record({ workspace_id: ws, started_at: Date.UTC(2025, 0, 14, 2, i), model }), pricer).row!);
    await new LedgerWriter(db, new RecordPartitions(db)).write(rows);
    const { rows: read } = await db.query<{ model: string }>("SELECT model FROM usage.records WHERE workspace_id = $1 ORDER BY started_at", [ws]);
    expect(read.map((r) => r.model)).toEqual(["gpt-test", "half \ufffd of a pair", "whole \ud83d\ude00 pair", "low \ufffd alone", "escaped \\ud83d text"]);
  });
});
