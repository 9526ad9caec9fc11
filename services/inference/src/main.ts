import { readNatsCredentials } from "@gw/bus";
import { loadGatewayConfig, resolveProviderSecrets } from "@gw/config";
import { redactSecrets } from "@gw/logger";
import { connectServiceBus, loadOrExit, runUntilSignal } from "@gw/service-kit";
import { startTracing } from "@gw/telemetry";
import { loadInferenceEnv } from "./config";
import { createInferenceService } from "./service";

const { config, logger } = loadOrExit("inference", process.env.LOG_LEVEL, () => {
  const env = loadInferenceEnv(process.env);
  const natsCredentials = env.NATS_CREDS ? readNatsCredentials(env.NATS_CREDS) : undefined;
  return { ...env, gateway: loadGatewayConfig(env.GATEWAY_CONFIG), natsCredentials };
});
const { gateway, natsCredentials, ...env } = config;
// Censored from every log line, in any form (see @gw/logger).
redactSecrets(logger, [env.GATEWAY_INTERNAL_SECRET, ...Object.values(resolveProviderSecrets(gateway, process.env))]);

await runUntilSignal(logger, async () => {
  // Spans are exported only when OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise this registers nothing.
  const tracing = await startTracing({ serviceName: "inference", env: process.env, logger });
  const bus = await connectServiceBus(env, natsCredentials, logger, "inference");
  const service = createInferenceService({
    bus,
    logger,
    gateway,
    secrets: resolveProviderSecrets(gateway, process.env),
    settings: {
      host: env.HOST,
      port: env.INFERENCE_PORT,
      internalSecret: env.GATEWAY_INTERNAL_SECRET,
      bodyLimitBytes: Math.floor(env.GATEWAY_BODY_LIMIT_MB * 1024 * 1024),
      jobConcurrency: env.GATEWAY_JOB_CONCURRENCY,
      jobsUrl: () => env.JOBS_URL,
    },
  });
  await service.start();
  return {
    async stop() {
      await service.stop();
      await bus.close();
      await tracing.shutdown();
    },
  };
});
