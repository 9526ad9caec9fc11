import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadGatewayConfig, resolveProviderSecrets } from "@gw/config";
import { createLogger } from "@gw/logger";
import { loadEmbeddedEnv } from "../../services/embedded/src/config";
import { startEmbedded } from "../../services/embedded/src/embedded";
import { adminClient, startTestMesh, type RunningMesh } from "./harness";
import { pgliteTemplate } from "./pglite-template";

/** A running gateway as a test sees it: the public base URL (ending in /v1) and the admin API. */
export interface GatewayTarget {
  baseURL: string;
  adminURL: string;
  adminToken: string;
  /** Set for the mesh only: its processes, ports and environment (for crash tests). */
  mesh?: RunningMesh;
  stop(): Promise<unknown>;
}

/** The plans every test config uses; the limits are high enough that no test meets them by accident. */
export const testPlans = `plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`;

/**
 * The two ways the gateway runs, started from the same config file and environment: the mesh (four
 * processes on this machine's Postgres, Redis and NATS) and the embedded default (one process,
 * PGlite, in-memory limits, in-process bus). Tests loop over both to show the same behaviour.
 */
export const targetNames = ["the mesh", "the embedded default"] as const;
export type TargetName = (typeof targetNames)[number];

export function startGatewayTarget(name: TargetName, configYaml: string, env: Record<string, string> = {}): Promise<GatewayTarget> {
  return starters[name](configYaml, env);
}

const starters: Record<TargetName, (configYaml: string, env: Record<string, string>) => Promise<GatewayTarget>> = {
  "the mesh": async (configYaml, env) => {
    const gw = await startTestMesh(configYaml, env);
    return { baseURL: gw.baseURL, adminURL: gw.adminURL, adminToken: gw.adminToken, mesh: gw, stop: () => gw.stop() };
  },
  "the embedded default": async (configYaml, env) => {
    const dir = mkdtempSync(join(tmpdir(), "gw-embedded-"));
    cpSync(await pgliteTemplate(), join(dir, "pglite"), { recursive: true });
    const configPath = join(dir, "gateway.config.yaml");
    writeFileSync(configPath, configYaml);
    const embeddedEnv = loadEmbeddedEnv({ ...env, PORT: "0", ADMIN_PORT: "0", GATEWAY_DATA_DIR: dir, GATEWAY_CONFIG: configPath });
    const gateway = loadGatewayConfig(embeddedEnv.GATEWAY_CONFIG);
    const logger = createLogger({ service: "embedded-test", level: "silent" });
    const gw = await startEmbedded(embeddedEnv, gateway, resolveProviderSecrets(gateway, env), logger);
    // Its data folder (a PGlite cluster of about 40 MB) goes with it.
    const stop = async () => {
      await gw.stop();
      rmSync(dir, { recursive: true, force: true });
    };
    return { baseURL: `${gw.url}/v1`, adminURL: gw.adminUrl, adminToken: gw.adminToken, stop };
  },
};

/** A new workspace (pro plan unless said otherwise) and one key of it. */
export async function newWorkspaceKey(
  target: Pick<GatewayTarget, "adminURL" | "adminToken">,
  workspace: Record<string, unknown>,
  key: Record<string, unknown> = {},
): Promise<{ workspaceId: string; keyId: string; key: string }> {
  const admin = adminClient(target.adminURL, target.adminToken);
  const ws = await admin<{ id: string }>("POST", "/admin/workspaces", { plan: "pro", ...workspace });
  const created = await admin<{ id: string; key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, key);
  return { workspaceId: ws.id, keyId: created.id, key: created.key };
}
