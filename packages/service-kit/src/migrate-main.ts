import { z } from "zod";
import { logLevel, parseEnv } from "@gw/config";
// Types only: the functions come from the caller, so services without a database (inference, tools)
// do not carry the database packages in their images through service-kit.
import type { createPgDb, runMigrations } from "@gw/db";
import { flushLogger } from "@gw/logger";
import { loadOrExit } from "./run";

const MigrateEnv = z.object({
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }),
  LOG_LEVEL: logLevel,
});

/**
 * A service's migration-only entry point: applies its schema's migrations to DATABASE_URL, then
 * exits 0, or 1 when one fails. Deployments run it before the service starts (the Kubernetes init
 * container, the compose `<service>-migrate` service), so a bad migration stops the rollout visibly
 * instead of failing readiness. The service still migrates at start, which is then a no-op; replicas
 * running it at once are safe (runMigrations queues them on an advisory lock).
 */
export async function migrateMain(schema: string, dir: string, db: { createPgDb: typeof createPgDb; runMigrations: typeof runMigrations }): Promise<void> {
  const { config: env, logger } = loadOrExit(`${schema}-migrate`, process.env.LOG_LEVEL, () => parseEnv(MigrateEnv, process.env));
  const pool = db.createPgDb({ url: env.DATABASE_URL, max: 1, applicationName: `gw-${schema}-migrate`, logger });
  try {
    const applied = await db.runMigrations(pool, { schema, dir, logger });
    logger.info({ schema, applied }, applied.length > 0 ? "migrations applied" : "schema up to date");
  } catch (err) {
    logger.fatal({ err }, "migrations failed");
    process.exitCode = 1;
  } finally {
    await pool.close();
    flushLogger(logger);
  }
}
