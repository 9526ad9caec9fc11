import { loadGatewayConfig, resolveProviderSecrets } from "@gw/config";
import { loadOrExit, runUntilSignal } from "@gw/service-kit";
import { loadEmbeddedEnv } from "./config";
import { ensureDevelopmentWorkspace } from "./dev-workspace";
import { startEmbedded } from "./embedded";

const { config, logger } = loadOrExit("gateway", process.env.LOG_LEVEL, () => {
  const env = loadEmbeddedEnv(process.env);
  return { ...env, gateway: loadGatewayConfig(env.GATEWAY_CONFIG) };
});
const { gateway, ...env } = config;

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
