export type { Db, DbLogger, Queryable, QueryOptions, QueryResult } from "./types";
export { createPgDb } from "./pg-db";
export type { PgDbOptions } from "./pg-db";
export { createPgliteDb } from "./pglite-db";
export type { PgliteDbOptions } from "./pglite-db";
export { runMigrations } from "./migrate";
export { actingAs } from "./acting-as";
export type { MigrateOptions } from "./migrate";
