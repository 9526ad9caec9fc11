import { readNatsCredentials } from "@gw/bus";
import { loadGatewayConfig, providerSecretValues } from "@gw/config";
import { createPgDb } from "@gw/db";
import { redactSecrets } from "@gw/logger";
import { connectServiceBus, loadOrExit, runUntilSignal } from "@gw/service-kit";
import { startTracing } from "@gw/telemetry";
import { authGuardSettings, doorSettings, loadIngressEnv, rateLimitSettings } from "./config";
import { createIngressService } from "./service";

const { config, logger } = loadOrExit("ingress", process.env.LOG_LEVEL, () => {
  const env = loadIngressEnv(process.env);
  const natsCredentials = env.NATS_CREDS ? readNatsCredentials(env.NATS_CREDS) : undefined;
  return { ...env, gateway: loadGatewayConfig(env.GATEWAY_CONFIG), natsCredentials };
});
const { gateway, natsCredentials, ...env } = config;
// Censored from every log line, in any form (see @gw/logger).
redactSecrets(logger, [env.GATEWAY_ADMIN_TOKEN, env.GATEWAY_INTERNAL_SECRET, env.GATEWAY_MASTER_KEY]);

await runUntilSignal(logger, async () => {
  // Spans are exported only when OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise this registers nothing.
  const tracing = await startTracing({ serviceName: "ingress", env: process.env, logger });
  const db = createPgDb({ url: env.DATABASE_URL, applicationName: "gw-ingress" });
  const bus = await connectServiceBus(env, natsCredentials, logger, "ingress");
  const service = createIngressService({
    db,
    bus,
    logger,
    settings: {
      host: env.HOST,
      port: env.PORT,
      adminPort: env.ADMIN_PORT,
      adminToken: env.GATEWAY_ADMIN_TOKEN,
      internalSecret: env.GATEWAY_INTERNAL_SECRET,
      backends: { inference: env.INFERENCE_URL, tools: env.TOOLS_URL, jobs: env.JOBS_URL },
      bodyLimitBytes: Math.floor(env.GATEWAY_BODY_LIMIT_MB * 1024 * 1024),
      keyCacheTtlMs: env.GATEWAY_KEY_CACHE_TTL_MS,
      plans: gateway.plans,
      gateway,
      masterKey: env.GATEWAY_MASTER_KEY,
      providers: Object.keys(gateway.providers),
      redact: providerSecretValues(gateway, process.env),
      rateLimits: rateLimitSettings(env),
      authGuard: authGuardSettings(env),
      door: doorSettings(env),
      usageUrl: env.USAGE_URL,
      consoleUrl: env.CONSOLE_URL,
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
