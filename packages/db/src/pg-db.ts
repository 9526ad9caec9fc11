import { Pool } from "pg";
import type { PoolClient, QueryConfig } from "pg";
import { createTransactionGuard } from "./transaction-guard";
import type { Db, DbLogger, Queryable, QueryOptions, QueryResult } from "./types";

export interface PgDbOptions {
  /** postgres://user:pass@host:port/db (never logged: it may carry a password). */
  url: string;
  /** Pool size. Default 10: enough for one service replica, small enough that replicas × pools fit `max_connections`. */
  max?: number;
  /** Shows in pg_stat_activity, so an operator can tell which service holds a connection. */
  applicationName?: string;
  /** Server-side `statement_timeout` for every connection; unset means the server default. */
  statementTimeoutMs?: number;
  /** How long to wait for a connection before failing. Default 5000, so /readyz answers instead of hanging. */
  connectionTimeoutMs?: number;
  /** Where pool-level connection errors go. Default: a process warning. */
  logger?: DbLogger;
}

const fallbackLogger: DbLogger = {
  info() {},
  warn(obj, msg) {
    process.emitWarning(`${msg ?? "db"} ${JSON.stringify(obj)}`, "GatewayDbWarning");
  },
};

/** A `Db` over a `pg.Pool`. Connects lazily: creating it never fails, `ping()` tells whether the server answers. */
export function createPgDb(options: PgDbOptions): Db {
  const logger = options.logger ?? fallbackLogger;
  const pool = new Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    application_name: options.applicationName,
    statement_timeout: options.statementTimeoutMs,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    // Keep-alive lets the OS notice a silently dropped connection (NAT, failover) on idle clients.
    keepAlive: true,
  });
  // An idle client losing its connection (server restart, failover) is emitted here; without a
  // listener it would crash the process. The pool discards that client and opens a new one on demand.
  pool.on("error", (err) => {
    logger.warn({ err: { message: err.message, code: codeOf(err) } }, "postgres idle connection error");
  });

  const guard = createTransactionGuard();
  let closing: Promise<void> | undefined;

  return {
    kind: "pg",
    async query<R = Record<string, unknown>>(sql: string, params?: unknown[], options?: QueryOptions): Promise<QueryResult<R>> {
      guard.assertOutside("query");
      return toResult<R>(await pool.query(statement(sql, params, options)));
    },
    async exec(sql) {
      guard.assertOutside("exec");
      // No parameter array: pg then uses the simple query protocol, which accepts several statements.
      await pool.query(sql);
    },
    async transaction(fn) {
      guard.assertOutside("transaction");
      const client = await pool.connect();
      return runTransaction(client, (tx) => guard.run(() => fn(tx)));
    },
    async ping() {
      try {
        await pool.query("select 1");
        return true;
      } catch {
        return false;
      }
    },
    close() {
      // pg throws when end() is called twice; shutdown paths often overlap, so make it idempotent.
      closing ??= pool.end();
      return closing;
    },
  };
}

/** A statement as pg runs it: named when asked, so that each connection prepares it once. */
function statement(sql: string, params: unknown[] | undefined, options: QueryOptions | undefined): QueryConfig {
  return options?.name === undefined ? { text: sql, values: params } : { name: options.name, text: sql, values: params };
}

async function runTransaction<T>(client: PoolClient, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  let open = true;
  const ensureOpen = (): void => {
    // A handle that outlived its transaction would run on a client already back in the pool,
    // possibly inside someone else's transaction.
    if (!open) throw new Error("transaction is closed");
  };
  const tx: Queryable = {
    async query<R = Record<string, unknown>>(sql: string, params?: unknown[], options?: QueryOptions): Promise<QueryResult<R>> {
      ensureOpen();
      return toResult<R>(await client.query(statement(sql, params, options)));
    },
    async exec(sql) {
      ensureOpen();
      await client.query(sql);
    },
  };

  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await fn(tx);
    open = false;
    const commit = await client.query("COMMIT");
    // Postgres answers COMMIT of an aborted transaction (a statement failed and the callback
    // swallowed the error) with ROLLBACK and no error; surface it as PGlite does.
    if (commit.command === "ROLLBACK") {
      throw new Error("transaction was aborted by an earlier failed statement and has been rolled back");
    }
    return result;
  } catch (err) {
    open = false;
    try {
      await client.query("ROLLBACK");
    } catch (rollbackErr) {
      // The connection is unusable: tell the pool to destroy it rather than hand it out again.
      broken = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
    }
    throw err;
  } finally {
    client.release(broken);
  }
}

function toResult<R>(res: { rows: unknown[]; rowCount: number | null }): QueryResult<R> {
  // The row shape is the caller's assertion about its own SQL; no driver can check it.
  return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
}

function codeOf(err: Error): string | undefined {
  return "code" in err && typeof err.code === "string" ? err.code : undefined;
}
