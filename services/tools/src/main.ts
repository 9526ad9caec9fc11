import { createNatsBus } from "@gw/bus";
import { loadGatewayConfig, resolveProviderSecrets, type GatewayConfig } from "@gw/config";
import { createLogger } from "@gw/logger";
import { exitOnConfigError, runUntilSignal } from "@gw/service-kit";
import { loadToolsEnv, type ToolsEnv } from "./config";
import { createToolsService } from "./service";

const bootLogger = createLogger({ service: "tools", level: process.env.LOG_LEVEL });
let env: ToolsEnv;
let gateway: GatewayConfig;
try {
  env = loadToolsEnv(process.env);
  gateway = loadGatewayConfig(env.GATEWAY_CONFIG);
} catch (err) {
  exitOnConfigError(bootLogger, err);
}
const logger = createLogger({ service: "tools", level: env.LOG_LEVEL });

await runUntilSignal(logger, async () => {
  const bus = await createNatsBus({ url: env.NATS_URL, namespace: env.NATS_NAMESPACE, logger, name: "tools" });
  const service = createToolsService({
    bus,
    logger,
    gateway,
    secrets: resolveProviderSecrets(gateway, process.env),
    settings: { host: env.HOST, port: env.TOOLS_PORT, internalSecret: env.GATEWAY_INTERNAL_SECRET },
  });
  await service.start();
  return {
    async stop() {
      await service.stop();
      await bus.close();
    },
  };
});
