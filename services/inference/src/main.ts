import { createNatsBus } from "@gw/bus";
import { loadGatewayConfig, resolveProviderSecrets, type GatewayConfig } from "@gw/config";
import { createLogger } from "@gw/logger";
import { exitOnConfigError, runUntilSignal } from "@gw/service-kit";
import { loadInferenceEnv, type InferenceEnv } from "./config";
import { createInferenceService } from "./service";

const bootLogger = createLogger({ service: "inference", level: process.env.LOG_LEVEL });
let env: InferenceEnv;
let gateway: GatewayConfig;
try {
  env = loadInferenceEnv(process.env);
  gateway = loadGatewayConfig(env.GATEWAY_CONFIG);
} catch (err) {
  exitOnConfigError(bootLogger, err);
}
const logger = createLogger({ service: "inference", level: env.LOG_LEVEL });

await runUntilSignal(logger, async () => {
  const bus = await createNatsBus({ url: env.NATS_URL, namespace: env.NATS_NAMESPACE, logger, name: "inference" });
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
    },
  });
  await service.start();
  return {
    async stop() {
      await service.stop();
      await bus.close();
    },
  };
});
