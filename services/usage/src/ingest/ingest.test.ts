import { MAX_USAGE_BATCH, type UsageRecord } from "@gw/contracts";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { logger, record, testPricer } from "../testing/harness";
import { Ingest } from "./ingest";
import type { LedgerRow } from "./ledger-row";
import type { LedgerWriter, WriteResult } from "./ledger-writer";

const counter = { inc: () => undefined };
const metrics = { ingested: counter, duplicates: counter, expired: counter, invalid: counter, unpriced: counter, failedBatches: counter };
const now = Date.UTC(2026, 11, 2, 12);

const message = (m: number, size: number): UsageRecord[] =>
  Array.from({ length: size }, (_, i) => record({ request_id: `req_${m}_${i}`, workspace_id: "ws_1", started_at: now - 1_000 }));

/** An Ingest whose writer records each statement's rows and commits only when the test says so. */
function gatedIngest() {
  const statements: LedgerRow[][] = [];
  const commits: (() => void)[] = [];
  const writer = {
    write: (rows: readonly LedgerRow[]) => {
      statements.push([...rows]);
      return new Promise<WriteResult>((resolve) => commits.push(() => resolve({ inserted: [...rows], duplicates: 0 })));
    },
  } as unknown as LedgerWriter;
  const ingest = new Ingest({
    writer,
    pricer: testPricer(),
    logger,
    metrics,
    clock: () => now,
    retentionDays: 400,
    models: new Set(["gpt-test"]),
  });
  return { ingest, statements, commit: () => commits.shift()?.() };
}

// Fake timers that never advance: a batch the 250 ms wait would send never goes, so whatever is
// written was written by the batcher's count rules alone.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});
const flush = () => vi.advanceTimersByTimeAsync(0);

describe("when full messages arrive while a batch is being written (a backlog)", () => {
  it("then four of them are one statement, and each message is settled once its records commit", async () => {
    const { ingest, statements, commit } = gatedIngest();
    const settled: number[] = [];
    const handed = [0, 1, 2, 3, 4].map((m) => ingest.handleAll(message(m, MAX_USAGE_BATCH)).then(() => settled.push(m)));
    // The first goes at once (nothing was being written); the next four fill the second batch.
    await flush();
    expect(statements.map((rows) => rows.length)).toEqual([MAX_USAGE_BATCH, 4 * MAX_USAGE_BATCH]);
    expect(statements[1]!.map((r) => r.record.request_id)).toEqual([1, 2, 3, 4].flatMap((m) => message(m, MAX_USAGE_BATCH).map((r) => r.request_id)));
    commit();
    await flush();
    expect(settled).toEqual([0]);
    commit();
    await Promise.all(handed);
    expect(settled.sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it("then a message alone is still written at once, not held for more", async () => {
    const { ingest, statements, commit } = gatedIngest();
    const done = ingest.handleAll(message(0, MAX_USAGE_BATCH / 2));
    await flush();
    expect(statements.map((rows) => rows.length)).toEqual([MAX_USAGE_BATCH / 2]);
    commit();
    await done;
  });
});
