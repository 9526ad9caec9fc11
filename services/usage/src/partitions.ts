import type { Db, Queryable } from "@gw/db";
import { dayOf } from "./ingest/ledger-row";
import { DAY_MS } from "@gw/contracts";

const PARTITION = /^records_(\d{8})$/;
// Advisory lock key (two ints): replicas creating or dropping partitions at once take turns.
const LOCK: [number, number] = [0x4757_5531, 1]; // "GWU1"

export interface MaintenanceResult {
  created: string[];
  dropped: string[];
  rollupRowsDeleted: number;
}

/** `20250101` → the instant its UTC day starts. */
function dayStart(day: string): number {
  return Date.UTC(Number(day.slice(0, 4)), Number(day.slice(4, 6)) - 1, Number(day.slice(6, 8)));
}

function isoDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** The first instant retention keeps: the start of the UTC day the cut-off falls in. */
export function retainedFrom(now: number, retentionDays: number): number {
  const cutoff = now - retentionDays * DAY_MS;
  return Math.floor(cutoff / DAY_MS) * DAY_MS;
}

/**
 * The day partitions of `usage.records`: created ahead by maintenance, on demand for a day a batch
 * needs, and dropped whole (detached, then dropped) once past retention, so old records never cost
 * a DELETE and its vacuum.
 */
export class RecordPartitions {
  private readonly known = new Set<string>();

  constructor(private readonly db: Db) {}

  async list(): Promise<string[]> {
    const { rows } = await this.db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'usage.records'::regclass ORDER BY c.relname`,
    );
    const days = rows.map((r) => PARTITION.exec(r.name)?.[1]).filter((d): d is string => d !== undefined);
    for (const day of days) this.known.add(day);
    return days;
  }

  /** Makes sure every day has its partition; known days cost nothing. */
  async ensure(days: Iterable<string>): Promise<string[]> {
    const missing = [...new Set(days)].filter((day) => !this.known.has(day));
    if (missing.length === 0) return [];
    await this.db.transaction(async (tx) => {
      await lock(tx);
      for (const day of missing.sort()) {
        const from = dayStart(day);
        await tx.exec(
          `CREATE TABLE IF NOT EXISTS usage.records_${day} PARTITION OF usage.records
           FOR VALUES FROM ('${isoDay(from)}T00:00:00Z') TO ('${isoDay(from + DAY_MS)}T00:00:00Z')`,
        );
      }
    });
    for (const day of missing) this.known.add(day);
    return missing;
  }

  /**
   * Creates the partitions of today and the next `aheadDays` days, drops those wholly before the
   * retention cut-off, and deletes roll-up rows before it too (roll-ups are a few rows per hour,
   * so a DELETE is cheap there).
   */
  async maintain(now: number, retentionDays: number, aheadDays = 3): Promise<MaintenanceResult> {
    const today = Math.floor(now / DAY_MS) * DAY_MS;
    const ahead = Array.from({ length: aheadDays + 1 }, (_, i) => dayOf(today + i * DAY_MS));
    const created = await this.ensure(ahead);
    const keepFrom = retainedFrom(now, retentionDays);
    const expired = (await this.list()).filter((day) => dayStart(day) + DAY_MS <= keepFrom);
    const dropped: string[] = [];
    for (const day of expired) {
      const done = await this.db.transaction(async (tx) => {
        await lock(tx);
        // Another replica may have dropped it while this one waited for the lock.
        const { rows } = await tx.query<{ found: boolean }>("SELECT to_regclass($1) IS NOT NULL AS found", [`usage.records_${day}`]);
        if (!rows[0]?.found) return false;
        await tx.exec(`ALTER TABLE usage.records DETACH PARTITION usage.records_${day}; DROP TABLE usage.records_${day};`);
        return true;
      });
      this.known.delete(day);
      if (done) dropped.push(day);
    }
    const at = new Date(keepFrom);
    let rollupRowsDeleted = 0;
    for (const table of ["hourly", "hourly_models", "hourly_lines"]) {
      rollupRowsDeleted += (await this.db.query(`DELETE FROM usage.${table} WHERE hour < $1`, [at])).rowCount;
    }
    return { created, dropped, rollupRowsDeleted };
  }
}

async function lock(tx: Queryable): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)", LOCK);
}
