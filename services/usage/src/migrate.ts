import { createPgDb, runMigrations } from "@gw/db";
import { migrateMain } from "@gw/service-kit";
import { usageMigrations } from "./service";

/** Applies the `usage` schema's migrations and exits (see migrateMain). */
await migrateMain("usage", usageMigrations, { createPgDb, runMigrations });
