import { Umzug } from "umzug";
import type { UmzugStorage } from "umzug";
import { readMigrationFiles } from "./migration-files";
import type { Db, DbLogger, Queryable } from "./types";

export interface MigrateOptions {
  /** The service's schema; created if missing, holds `schema_migrations`, and is first on the search_path while its migrations run. */
  schema: string;
  /** Folder of `NNNN_name.sql` files, applied in file-name order. */
  dir: string;
  logger?: DbLogger;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

// First half of the two-int advisory lock key: keeps our keys apart from any advisory locks the
// services take for their own reasons. The value is arbitrary.
const LOCK_CLASS = 0x4757_4d31; // "GWM1"

/**
 * Applies the pending migrations of one schema and returns the names this call applied.
 *
 * Each file runs in its own transaction together with the row that records it, so a failure leaves
 * neither the change nor the record. Every such transaction first takes a transaction-level advisory
 * lock keyed on the schema and re-checks the record: replicas starting at once queue on the lock and
 * the later ones skip what the first applied. A transaction-level lock (rather than one session lock
 * around the whole run) needs only one connection at a time, so it also works on a pool of one and
 * on PGlite, where the same SQL runs unchanged.
 *
 * Migrations only go up: a bad migration is fixed by a new one.
 */
export async function runMigrations(db: Db, options: MigrateOptions): Promise<string[]> {
  const { schema, dir, logger } = options;
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error(`schema name "${schema}" must be a lowercase SQL identifier`);
  }
  const files = await readMigrationFiles(dir);
  const table = `"${schema}".schema_migrations`;

  await db.transaction(async (tx) => {
    // Under the lock too: concurrent CREATE SCHEMA IF NOT EXISTS can still fail on the catalog's unique index.
    await lockSchema(tx, schema);
    await tx.exec(
      `create schema if not exists "${schema}";
       create table if not exists ${table} (
         name text primary key,
         applied_at timestamptz not null default now()
       );`,
    );
  });

  const applied: string[] = [];
  const storage: UmzugStorage<Db> = {
    async executed() {
      const { rows } = await db.query<{ name: string }>(`select name from ${table} order by name`);
      return rows.map((r) => r.name);
    },
    // The record is written inside the migration's own transaction (below), not here, so that a crash
    // between the two cannot leave a change applied but unrecorded.
    async logMigration() {},
    async unlogMigration() {
      throw new Error("migrations only go up; write a new migration instead");
    },
  };

  const umzug = new Umzug<Db>({
    context: db,
    storage,
    logger: undefined,
    migrations: files.map((file) => ({
      name: file.name,
      path: file.path,
      up: async () => {
        const didApply = await db.transaction(async (tx) => {
          await lockSchema(tx, schema);
          const done = await tx.query(`select 1 from ${table} where name = $1`, [file.name]);
          if (done.rowCount > 0) return false; // another replica applied it while we waited for the lock
          // Unqualified names in a migration land in its own schema; public stays visible for extensions.
          await tx.exec(`set local search_path to "${schema}", public`);
          await tx.exec(file.sql);
          await tx.query(`insert into ${table} (name) values ($1)`, [file.name]);
          return true;
        });
        if (didApply) {
          applied.push(file.name);
          logger?.info({ schema, migration: file.name }, "migration applied");
        }
      },
    })),
  });

  const recorded = await umzug.executed();
  const onDisk = new Set(files.map((f) => f.name));
  const missing = recorded.map((m) => m.name).filter((name) => !onDisk.has(name));
  if (missing.length > 0) {
    // Usually a rollback to an older release: the database is ahead of this code. Not fatal, but worth knowing.
    logger?.warn({ schema, migrations: missing }, "applied migrations not found on disk");
  }

  await umzug.up();
  return applied;
}

async function lockSchema(tx: Queryable, schema: string): Promise<void> {
  await tx.query("select pg_advisory_xact_lock($1::int4, $2::int4)", [LOCK_CLASS, hash32(schema)]);
}

/** FNV-1a, as a signed 32-bit int for the advisory lock key; computed here rather than relying on Postgres' internal hashtext(). */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}
