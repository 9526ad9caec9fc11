import type { CapturedBodies } from "@gw/contracts";
import { DAY_MS } from "@gw/contracts";
import type { Db, Queryable } from "@gw/db";
import type { Logger } from "@gw/logger";

const PARTITION = /^bodies_(\d{8})$/;
// Advisory lock key (two ints), apart from the records' partitions' own.
const LOCK: [number, number] = [0x4757_5531, 2];

/** `20250101` of an instant's UTC day. */
function dayName(at: number): string {
  return new Date(at).toISOString().slice(0, 10).replaceAll("-", "");
}

function isoDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** The UTC day a request's bodies expire: the day it started plus the retention. */
export function expiryDay(startedAt: number, retentionDays: number): number {
  return (Math.floor(startedAt / DAY_MS) + retentionDays) * DAY_MS;
}

/**
 * Captured bodies (detailed logs) in `usage.bodies`, whose partitions are days of expiry: one is
 * made the first time a message needs it, and dropped whole once its day has passed.
 */
export class BodyStore {
  private readonly known = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {}

  /** Stores a request's bodies; a redelivered message is the same row and is skipped. Expired ones are not stored. */
  async write(bodies: CapturedBodies, now: number): Promise<"written" | "duplicate" | "expired"> {
    const expires = expiryDay(bodies.started_at, bodies.retention_days);
    if (expires + DAY_MS <= now) return "expired";
    await this.ensure(expires);
    const { rowCount } = await this.db.query(
      `INSERT INTO usage.bodies (request_id, expires_on, started_at, workspace_id, key_id, request, response)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb)
       ON CONFLICT DO NOTHING`,
      [
        bodies.request_id,
        isoDay(expires),
        new Date(bodies.started_at),
        bodies.workspace_id,
        bodies.key_id,
        JSON.stringify(bodies.request),
        bodies.response === undefined ? null : JSON.stringify(bodies.response),
      ],
    );
    return rowCount > 0 ? "written" : "duplicate";
  }

  /** A request's bodies, as the workspace that made it may read them; undefined when none were kept. */
  async read(requestId: string, workspaceId: string | undefined, now: number): Promise<Pick<CapturedBodies, "request" | "response"> | undefined> {
    const { rows } = await this.db.query<{ request: CapturedBodies["request"]; response: CapturedBodies["response"] | null }>(
      `SELECT request, response FROM usage.bodies WHERE request_id = $1 AND ($2::text IS NULL OR workspace_id = $2) AND expires_on >= $3::date LIMIT 1`,
      [requestId, workspaceId ?? null, isoDay(now)],
    );
    const row = rows[0];
    if (!row) return undefined;
    return row.response === null ? { request: row.request } : { request: row.request, response: row.response };
  }

  /** Drops every partition whose day of expiry has passed; answers the days dropped. */
  async dropExpired(now: number): Promise<string[]> {
    const { rows } = await this.db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'usage.bodies'::regclass`,
    );
    const today = Math.floor(now / DAY_MS) * DAY_MS;
    const expired = rows
      .map((r) => PARTITION.exec(r.name)?.[1])
      .filter((day): day is string => day !== undefined && day < dayName(today))
      .sort();
    for (const day of expired) {
      await this.db.transaction(async (tx) => {
        await lock(tx);
        const { rows: found } = await tx.query<{ found: boolean }>("SELECT to_regclass($1) IS NOT NULL AS found", [`usage.bodies_${day}`]);
        if (found[0]?.found) await tx.exec(`ALTER TABLE usage.bodies DETACH PARTITION usage.bodies_${day}; DROP TABLE usage.bodies_${day};`);
      });
      this.known.delete(day);
    }
    if (expired.length > 0) this.logger.info({ days: expired }, "usage: expired detailed-log partitions dropped");
    return expired;
  }

  private async ensure(expires: number): Promise<void> {
    const day = dayName(expires);
    if (this.known.has(day)) return;
    await this.db.transaction(async (tx) => {
      await lock(tx);
      await tx.exec(
        `CREATE TABLE IF NOT EXISTS usage.bodies_${day} PARTITION OF usage.bodies FOR VALUES FROM ('${isoDay(expires)}') TO ('${isoDay(expires + DAY_MS)}')`,
      );
    });
    this.known.add(day);
  }
}

async function lock(tx: Queryable): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)", LOCK);
}
