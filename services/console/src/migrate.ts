import { createPgDb, runMigrations } from "@gw/db";
import { migrateMain } from "@gw/service-kit";
import { consoleMigrations } from "./service";

/** Applies the `console` schema's migrations and exits (see migrateMain). */
await migrateMain("console", consoleMigrations, { createPgDb, runMigrations });
