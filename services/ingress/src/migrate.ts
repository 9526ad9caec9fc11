import { createPgDb, runMigrations } from "@gw/db";
import { migrateMain } from "@gw/service-kit";
import { ingressMigrations } from "./service";

/** Applies the `ingress` schema's migrations and exits (see migrateMain). */
await migrateMain("ingress", ingressMigrations, { createPgDb, runMigrations });
