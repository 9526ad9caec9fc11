import type { Db, Queryable } from "./types";

/**
 * The same database, with every statement run in a transaction whose `gw.actor` setting names who
 * is acting: audit triggers read it (ingress's migration 0004), so a change records the person who
 * made it, in the change's own transaction. For stores whose writes are one statement each.
 */
export function actingAs(db: Db, actor: string): Queryable {
  return {
    query: (sql, params) =>
      db.transaction(async (tx) => {
        await tx.query("SELECT set_config('gw.actor', $1, true)", [actor]);
        return tx.query(sql, params);
      }),
    exec: (sql) =>
      db.transaction(async (tx) => {
        await tx.query("SELECT set_config('gw.actor', $1, true)", [actor]);
        await tx.exec(sql);
      }),
  };
}
