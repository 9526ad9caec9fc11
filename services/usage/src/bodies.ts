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

  /**
   * Stores one message's bodies in one statement; a request's bodies delivered again are the same
   * row and are skipped, expired ones are not stored. Answers how many of each.
   */
  async write(batch: readonly CapturedBodies[], now: number): Promise<{ written: number; duplicate: number; expired: number }> {
    const kept = batch.filter((b) => expiryDay(b.started_at, b.retention_days) + DAY_MS > now);
    const expired = batch.length - kept.length;
    if (kept.length === 0) return { written: 0, duplicate: 0, expired };
    for (const day of new Set(kept.map((b) => expiryDay(b.started_at, b.retention_days)))) await this.ensure(day);
    const rows = kept.map((b) => ({
      request_id: b.request_id,
      expires_on: isoDay(expiryDay(b.started_at, b.retention_days)),
      started_at: b.started_at,
      workspace_id: b.workspace_id,
      key_id: b.key_id,
      request: b.request,
      response: b.response ?? null,
    }));
    const { rowCount } = await this.db.query(
      `INSERT INTO usage.bodies (request_id, expires_on, started_at, workspace_id, key_id, request, response)
       SELECT request_id, expires_on, timestamptz 'epoch' + started_at * interval '1 millisecond', workspace_id, key_id, request, response
       FROM json_to_recordset($1::json) AS (request_id text, expires_on date, started_at int8, workspace_id text, key_id text, request jsonb, response jsonb)
       ON CONFLICT DO NOTHING`,
      [wellFormedJson(rows)],
    );
    return { written: rowCount, duplicate: kept.length - rowCount, expired };
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

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** JSON Postgres accepts: a lone UTF-16 surrogate (JSON escapes it; Postgres refuses the escape) becomes U+FFFD, and NUL, which text cannot hold, too. */
function wellFormedJson(value: unknown): string {
  const json = JSON.stringify(value);
  if (!json.includes("\\ud") && !json.includes("\\u0000")) return json;
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "string" ? v.replace(LONE_SURROGATE, "\uFFFD").replaceAll("\u0000", "\uFFFD") : v));
}
