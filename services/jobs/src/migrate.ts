import { createPgDb, runMigrations } from "@gw/db";
import { migrateMain } from "@gw/service-kit";
import { jobsMigrations } from "./service";

/** Applies the `jobs` schema's migrations and exits (see migrateMain). */
await migrateMain("jobs", jobsMigrations, { createPgDb, runMigrations });
