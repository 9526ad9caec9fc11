import { readNatsCredentials } from "@gw/bus";
import { loadGatewayConfig, providerSecretValues } from "@gw/config";
import { createPgDb } from "@gw/db";
import { redactSecrets } from "@gw/logger";
import { connectServiceBus, loadOrExit, runUntilSignal } from "@gw/service-kit";
import { startTracing } from "@gw/telemetry";
import { jobTimings, loadJobsEnv } from "./config";
import { createJobsService } from "./service";

const { config, logger } = loadOrExit("jobs", process.env.LOG_LEVEL, () => {
  const env = loadJobsEnv(process.env);
  const natsCredentials = env.NATS_CREDS ? readNatsCredentials(env.NATS_CREDS) : undefined;
  return { ...env, gateway: loadGatewayConfig(env.GATEWAY_CONFIG), natsCredentials };
});
const { gateway, natsCredentials, ...env } = config;
// Censored from every log line, in any form (see @gw/logger).
redactSecrets(logger, [env.GATEWAY_INTERNAL_SECRET, env.GATEWAY_MASTER_KEY]);

await runUntilSignal(logger, async () => {
  // Spans are exported only when OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise this registers nothing.
  const tracing = await startTracing({ serviceName: "jobs", env: process.env, logger });
  const db = createPgDb({ url: env.DATABASE_URL, applicationName: "gw-jobs" });
  const bus = await connectServiceBus(env, natsCredentials, logger, "jobs");
  const service = createJobsService({
    db,
    bus,
    logger,
    gateway,
    settings: {
      host: env.HOST,
      port: env.JOBS_PORT,
      internalSecret: env.GATEWAY_INTERNAL_SECRET,
      masterKey: env.GATEWAY_MASTER_KEY,
      bodyLimitBytes: Math.floor(env.GATEWAY_BODY_LIMIT_MB * 1024 * 1024),
      timings: jobTimings(env),
      redact: providerSecretValues(gateway, process.env),
      ingressAdminUrl: () => env.INGRESS_ADMIN_URL,
    },
  });
  await service.start();
  return {
    async stop() {
      await service.stop();
      await bus.close();
      await db.close();
      await tracing.shutdown();
    },
  };
});
