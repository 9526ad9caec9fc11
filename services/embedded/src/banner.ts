import { buildInfo } from "@gw/config";
import type { ResolvedSecret } from "./secret-file";

/** "0.1.0 (3f2a9c1d0b7e)": the release and the commit, as /readyz and the metrics report them. */
function version(): string {
  const { version, commit } = buildInfo();
  return `${version} (${commit})`;
}

/**
 * What `pnpm start` and `pnpm start:mesh` print for the person at the terminal. A secret the
 * operator supplied is never echoed; a generated one is named by its file. The development key is
 * the one exception: it is shown once, as the admin API shows a new key, and never again.
 */
export function adminTokenLine(token: ResolvedSecret, variable = "GATEWAY_ADMIN_TOKEN"): string {
  if (token.supplied) return `  admin token    from ${variable} (not shown)`;
  return `  admin token    in ${token.path} (${token.created ? "new; " : ""}readable only by you; pnpm gw reads it from there)`;
}

export interface EmbeddedBannerInput {
  url: string;
  adminUrl: string;
  adminToken: ResolvedSecret;
  dev: { key?: string; workspaceId?: string; count: number };
  /** The first operator's single-use console sign-in link, on a fresh data folder. */
  firstSignIn?: string;
}

export function embeddedBanner({ url, adminUrl, adminToken, dev, firstSignIn }: EmbeddedBannerInput): string {
  const lines = [
    "",
    `AI gateway ${version()} running (embedded default)`,
    `  API base URL   ${url}/v1`,
    `  console        ${url}/console/`,
    ...(firstSignIn
      ? [`  first sign-in  ${firstSignIn}`, "                 (single use, for 24 hours; later: pnpm gw user create --email you@example.com --operator)"]
      : []),
    `  admin API      ${adminUrl}/admin`,
    adminTokenLine(adminToken),
    ...(dev.key
      ? [
          `  dev key        ${dev.key}`,
          `                 (workspace ${dev.workspaceId}; shown this once and never again: it is stored only as a hash, so keep it now)`,
        ]
      : [`  workspaces     ${dev.count} already exist; create a key with: pnpm gw key create <workspace-id>`]),
    "",
  ];
  return `${lines.join("\n")}\n`;
}

export function meshBanner(input: { url: string; adminUrl: string; adminToken: ResolvedSecret }): string {
  const lines = [
    "",
    `AI gateway ${version()} running (mesh: six processes)`,
    `  API base URL   ${input.url}/v1`,
    `  console        ${input.url}/console/ (first operator: pnpm gw user create --email you@example.com --operator)`,
    `  admin API      ${input.adminUrl}/admin`,
    adminTokenLine(input.adminToken),
    "  create a workspace and key: pnpm gw workspace create dev --plan pro; pnpm gw key create <workspace-id>",
    "",
  ];
  return `${lines.join("\n")}\n`;
}
