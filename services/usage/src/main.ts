import { readNatsCredentials } from "@gw/bus";
import { loadGatewayConfig } from "@gw/config";
import { createPgDb } from "@gw/db";
import { redactSecrets } from "@gw/logger";
import { startTracing } from "@gw/telemetry";
import { connectServiceBus, loadOrExit, runUntilSignal } from "@gw/service-kit";
import { loadUsageEnv } from "./config";
import { createUsageService } from "./service";

const { config, logger } = loadOrExit("usage", process.env.LOG_LEVEL, () => {
  const env = loadUsageEnv(process.env);
  const natsCredentials = env.NATS_CREDS ? readNatsCredentials(env.NATS_CREDS) : undefined;
  return { ...env, gateway: loadGatewayConfig(env.GATEWAY_CONFIG), natsCredentials };
});
const { gateway, natsCredentials, ...env } = config;
// Censored from every log line, in any form (see @gw/logger).
redactSecrets(logger, [env.GATEWAY_INTERNAL_SECRET]);

await runUntilSignal(logger, async () => {
  const tracing = await startTracing({ serviceName: "usage", env: process.env, logger });
  const db = createPgDb({ url: env.DATABASE_URL, applicationName: "gw-usage" });
  const bus = await connectServiceBus(env, natsCredentials, logger, "usage");
  const service = createUsageService({
    db,
    bus,
    logger,
    gateway,
    settings: {
      host: env.HOST,
      port: env.USAGE_PORT,
      internalSecret: env.GATEWAY_INTERNAL_SECRET,
      retentionDays: env.GATEWAY_USAGE_RETENTION_DAYS,
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
