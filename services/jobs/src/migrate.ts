import { z } from "zod";
import { logLevel, parseEnv } from "@gw/config";
import { createPgDb, runMigrations } from "@gw/db";
import { flushLogger } from "@gw/logger";
import { loadOrExit } from "@gw/service-kit";
import { jobsMigrations } from "./service";

/**
 * Migration-only entry point: applies the `jobs` schema's migrations to DATABASE_URL, then exits 0,
 * or 1 when one fails. Deployments run it before the service starts (the Kubernetes init container,
 * the compose `jobs-migrate` service), so a bad migration stops the rollout visibly instead of
 * failing readiness. The service still migrates at start, which is then a no-op; replicas running
 * it at once are safe (runMigrations queues them on an advisory lock).
 */
const MigrateEnv = z.object({
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }),
  LOG_LEVEL: logLevel,
});

const { config: env, logger } = loadOrExit("jobs-migrate", process.env.LOG_LEVEL, () => parseEnv(MigrateEnv, process.env));

const db = createPgDb({ url: env.DATABASE_URL, max: 1, applicationName: "gw-jobs-migrate", logger });
try {
  const applied = await runMigrations(db, { schema: "jobs", dir: jobsMigrations, logger });
  logger.info({ schema: "jobs", applied }, applied.length > 0 ? "migrations applied" : "schema up to date");
} catch (err) {
  logger.fatal({ err }, "migrations failed");
  process.exitCode = 1;
} finally {
  await db.close();
  flushLogger(logger);
}
