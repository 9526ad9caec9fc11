import { loadGatewayConfig } from "@gw/config";
import { createPgDb } from "@gw/db";
import { redactSecrets } from "@gw/logger";
import { startTracing } from "@gw/telemetry";
import { loadOrExit, runUntilSignal } from "@gw/service-kit";
import { loadConsoleEnv, oidcSettings, smtpSettings } from "./config";
import { createConsoleService } from "./service";

const { config, logger } = loadOrExit("console", process.env.LOG_LEVEL, () => {
  const env = loadConsoleEnv(process.env);
  return { ...env, gateway: loadGatewayConfig(env.GATEWAY_CONFIG), oidc: oidcSettings(env), smtp: smtpSettings(env) };
});
const { gateway, oidc, smtp, ...env } = config;
// Censored from every log line, in any form (see @gw/logger).
redactSecrets(
  logger,
  [env.GATEWAY_INTERNAL_SECRET, env.GATEWAY_OIDC_CLIENT_SECRET].filter((v): v is string => v !== undefined),
);

await runUntilSignal(logger, async () => {
  const tracing = await startTracing({ serviceName: "console", env: process.env, logger });
  const db = createPgDb({ url: env.DATABASE_URL, applicationName: "gw-console" });
  const service = createConsoleService({
    db,
    logger,
    gateway,
    settings: {
      host: env.HOST,
      port: env.CONSOLE_PORT,
      internalSecret: env.GATEWAY_INTERNAL_SECRET,
      ingressAdminUrl: env.INGRESS_ADMIN_URL,
      publicUrl: env.GATEWAY_PUBLIC_URL,
      oidc,
      smtp,
    },
  });
  await service.start();
  return {
    async stop() {
      await service.stop();
      await db.close();
      await tracing.shutdown();
    },
  };
});
