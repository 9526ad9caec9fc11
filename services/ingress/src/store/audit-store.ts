import type { AuditRecord } from "@gw/contracts";
import type { Db } from "@gw/db";
import { GatewayError } from "@gw/errors";
import { z } from "zod";

export type { AuditRecord };

interface AuditRow {
  id: string;
  at: Date | string;
  actor: string;
  action: string;
  target_kind: string;
  target_id: string;
  workspace_id: string;
  before: unknown;
  after: unknown;
}

const instant = z.union([z.iso.datetime({ offset: true }), z.iso.date()]).transform((text) => new Date(text));

export const AuditQuery = z.strictObject({
  workspace_id: z.string().min(1).max(100).optional(),
  from: instant.optional(),
  to: instant.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z
    .string()
    .regex(/^\d{1,19}$/, "a next_cursor from an earlier page")
    .optional(),
});
export type AuditQuery = z.infer<typeof AuditQuery>;

/**
 * The audit trail of ingress's own tables (migration 0004): every change to a workspace, key or
 * provider credential, written by triggers in the change's own transaction. Read newest first, in
 * pages whose cursor is the last id seen, so records added meanwhile are neither skipped nor repeated.
 */
export class AuditStore {
  constructor(private readonly db: Db) {}

  async list(query: AuditQuery): Promise<{ object: "list"; data: AuditRecord[]; next_cursor: string | null }> {
    if (query.from && query.to && query.from >= query.to)
      throw new GatewayError("invalid_request", "Invalid query: from: must be before to", { param: "from" });
    const { rows } = await this.db.query<AuditRow>(
      `SELECT id::text, at, actor, action, target_kind, target_id, workspace_id, before, after
       FROM ingress.audit
       WHERE ($1::text IS NULL OR workspace_id = $1)
         AND ($2::timestamptz IS NULL OR at >= $2)
         AND ($3::timestamptz IS NULL OR at < $3)
         AND ($4::bigint IS NULL OR id < $4)
       ORDER BY id DESC
       LIMIT $5`,
      [query.workspace_id ?? null, query.from?.toISOString() ?? null, query.to?.toISOString() ?? null, query.cursor ?? null, query.limit + 1],
    );
    const page = rows.slice(0, query.limit);
    return {
      object: "list",
      data: page.map((row) => ({
        object: "audit_record",
        id: row.id,
        at: new Date(row.at).toISOString(),
        actor: row.actor,
        action: row.action,
        workspace_id: row.workspace_id,
        target: { kind: row.target_kind, id: row.target_id },
        before: row.before,
        after: row.after,
      })),
      next_cursor: rows.length > query.limit ? (page.at(-1)?.id ?? null) : null,
    };
  }
}
