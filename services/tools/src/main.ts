import { readNatsCredentials } from "@gw/bus";
import { loadGatewayConfig, resolveProviderSecrets } from "@gw/config";
import { redactSecrets } from "@gw/logger";
import { connectServiceBus, loadOrExit, runUntilSignal } from "@gw/service-kit";
import { startTracing } from "@gw/telemetry";
import { loadToolsEnv, researchPolling } from "./config";
import { createToolsService } from "./service";
import { checkToolProviders } from "./tool-upstream";

const { config, logger } = loadOrExit("tools", process.env.LOG_LEVEL, () => {
  const env = loadToolsEnv(process.env);
  const gateway = loadGatewayConfig(env.GATEWAY_CONFIG);
  checkToolProviders(gateway);
  return { ...env, gateway, natsCredentials: env.NATS_CREDS ? readNatsCredentials(env.NATS_CREDS) : undefined };
});
const { gateway, natsCredentials, ...env } = config;
// Censored from every log line, in any form (see @gw/logger).
redactSecrets(logger, [env.GATEWAY_INTERNAL_SECRET, ...Object.values(resolveProviderSecrets(gateway, process.env))]);

await runUntilSignal(logger, async () => {
  // Spans are exported only when OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise this registers nothing.
  const tracing = await startTracing({ serviceName: "tools", env: process.env, logger });
  const bus = await connectServiceBus(env, natsCredentials, logger, "tools");
  const service = createToolsService({
    bus,
    logger,
    gateway,
    secrets: resolveProviderSecrets(gateway, process.env),
    settings: {
      host: env.HOST,
      port: env.TOOLS_PORT,
      internalSecret: env.GATEWAY_INTERNAL_SECRET,
      jobConcurrency: env.GATEWAY_JOB_CONCURRENCY,
      researchPolling: researchPolling(env),
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
