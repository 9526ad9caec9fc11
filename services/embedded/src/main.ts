import { loadGatewayConfig, resolveProviderSecrets, type GatewayConfig } from "@gw/config";
import { createLogger } from "@gw/logger";
import { exitOnConfigError, runUntilSignal } from "@gw/service-kit";
import { loadEmbeddedEnv, type EmbeddedEnv } from "./config";
import { ensureDevelopmentWorkspace } from "./dev-workspace";
import { startEmbedded } from "./embedded";

const bootLogger = createLogger({ service: "gateway", level: process.env.LOG_LEVEL });
let env: EmbeddedEnv;
let gateway: GatewayConfig;
try {
  env = loadEmbeddedEnv(process.env);
  gateway = loadGatewayConfig(env.GATEWAY_CONFIG);
} catch (err) {
  exitOnConfigError(bootLogger, err);
}
const logger = createLogger({ service: "gateway", level: env.LOG_LEVEL });

await runUntilSignal(logger, async () => {
  const running = await startEmbedded(env, gateway, resolveProviderSecrets(gateway, process.env), logger);
  const dev = await ensureDevelopmentWorkspace(running.adminUrl, running.adminToken);
  const lines = [
    "",
    "AI gateway running (embedded default)",
    `  API base URL   ${running.url}/v1`,
    `  admin API      ${running.adminUrl}/admin`,
    `  admin token    ${running.adminToken}`,
    dev.key
      ? `  dev key        ${dev.key}   (workspace ${dev.workspaceId}; shown once, keep it)`
      : `  workspaces     ${dev.count} already exist; create a key with: pnpm gw key create <workspace-id>`,
    "",
  ];
  // The banner is for the person at the terminal, not a log line.
  process.stdout.write(`${lines.join("\n")}\n`);
  return running;
});
