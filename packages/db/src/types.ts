/** Result of one statement. `rowCount` is the rows returned (SELECT) or affected (INSERT/UPDATE/DELETE), 0 otherwise. */
export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

/** How one statement is run. */
export interface QueryOptions {
  /**
   * Names the statement: on `pg`, each connection then prepares it once and Postgres reuses its
   * parse and, after a few runs, its plan. For a long statement run often with one text (the
   * ledger's batch write, where it saves Postgres about a tenth of its work a record). A name
   * stands for one text in the whole process. PGlite ignores it.
   */
  name?: string;
}

/** What a transaction callback gets: the same statements as `Db`, bound to the transaction. */
export interface Queryable {
  /** One statement, `$1`-style parameters. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[], options?: QueryOptions): Promise<QueryResult<R>>;
  /** Any number of `;`-separated statements, no parameters (simple query protocol). */
  exec(sql: string): Promise<void>;
}

/**
 * A Postgres database, real (`pg`) or embedded (PGlite), held to one behaviour by `db-contract.ts`.
 * Values come back as `pg` returns them by default: int8 and numeric as strings, json parsed,
 * timestamps as `Date`.
 */
export interface Db extends Queryable {
  readonly kind: "pg" | "pglite";
  /**
   * Runs `fn` inside BEGIN … COMMIT; any rejection rolls back and is rethrown. Use only `tx` inside:
   * calling this `Db` from inside the callback is refused, because on a single connection it would
   * deadlock and on a pool it would silently run outside the transaction.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** True when a trivial query succeeds; never throws (for readiness checks). */
  ping(): Promise<boolean>;
  /** Releases connections or the embedded instance. Safe to call more than once. */
  close(): Promise<void>;
}

/** The slice of a pino-style logger this package needs, so it does not depend on one. */
export interface DbLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}
