import { createNatsBus } from "@gw/bus";
import { createPgDb } from "@gw/db";
import { createLogger } from "@gw/logger";
import { exitOnConfigError, runUntilSignal } from "@gw/service-kit";
import { loadJobsEnv, type JobsEnv } from "./config";
import { createJobsService } from "./service";

const bootLogger = createLogger({ service: "jobs", level: process.env.LOG_LEVEL });
let env: JobsEnv;
try {
  env = loadJobsEnv(process.env);
} catch (err) {
  exitOnConfigError(bootLogger, err);
}
const logger = createLogger({ service: "jobs", level: env.LOG_LEVEL });

await runUntilSignal(logger, async () => {
  const db = createPgDb({ url: env.DATABASE_URL, applicationName: "gw-jobs" });
  const bus = await createNatsBus({ url: env.NATS_URL, namespace: env.NATS_NAMESPACE, logger, name: "jobs" });
  const service = createJobsService({
    db,
    bus,
    logger,
    settings: { host: env.HOST, port: env.JOBS_PORT, internalSecret: env.GATEWAY_INTERNAL_SECRET },
  });
  await service.start();
  return {
    async stop() {
      await service.stop();
      await bus.close();
      await db.close();
    },
  };
});
