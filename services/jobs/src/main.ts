import { createNatsBus } from "@gw/bus";
import { createPgDb } from "@gw/db";
import { loadOrExit, runUntilSignal } from "@gw/service-kit";
import { loadJobsEnv } from "./config";
import { createJobsService } from "./service";

const { config: env, logger } = loadOrExit("jobs", process.env.LOG_LEVEL, () => loadJobsEnv(process.env));

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
