import { existsSync } from "node:fs";
import { join } from "node:path";
import { testRedisUrl } from "@gw/testkit";
import { adminClient, startTestMesh } from "../../../test/e2e/harness";

/** The public model name; the direct path sends the same name, so both request bodies are identical. */
export const benchModel = "gpt-4o-mini";

export interface BenchGateway {
  /** Public API base URL, ending in /v1. */
  baseURL: string;
  /** A workspace key allowed to use `benchModel`. */
  key: string;
  /** The admin API, for scenarios that set up workspaces of their own. */
  admin: ReturnType<typeof adminClient>;
  /** Process ids of the four services, for CPU and memory readings. */
  pids: Record<string, number>;
  /** Everything the services printed (warnings and errors only, at LOG_LEVEL=warn). */
  output(): string;
  /** SIGTERM to every service, waits for them to exit, drops the database; the exit codes. */
  stop(): Promise<Record<string, number | null>>;
}

export interface GatewayOptions {
  /** OpenAI-style base URL of the benchmark's upstream. */
  upstreamURL: string;
  upstreamKey: string;
  /** More environment for the four services (e.g. NODE_OPTIONS to profile them). */
  serviceEnv?: Record<string, string>;
  /** Start the services of this other checkout (its own entry points and node_modules), not this tree's. */
  root?: string;
  /** Start the services' bundles (services/<name>/dist/main.js, from `pnpm build`), not their sources. */
  built?: boolean;
}

/**
 * The four services as separate processes, as the e2e test starts them (fresh database and NATS
 * namespace, LOG_LEVEL=warn), plus Redis as `pnpm start:mesh` uses it, with one model routed to the
 * benchmark upstream and a workspace whose limits the benchmark cannot reach.
 */
export async function startGateway(options: GatewayOptions): Promise<BenchGateway> {
  const mesh = await startTestMesh(
    configYaml(options.upstreamURL, options.root === undefined || acceptsPrices(options.root)),
    {
      BENCH_UPSTREAM_KEY: options.upstreamKey,
      REDIS_URL: await testRedisUrl(),
      ...options.serviceEnv,
    },
    { root: options.root, built: options.built },
  );
  try {
    const admin = adminClient(mesh.adminURL, mesh.adminToken);
    const ws = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "bench", plan: "enterprise", models: [benchModel] });
    const { key } = await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, { name: "bench" });
    const pids = Object.fromEntries(Object.entries(mesh.mesh.processes).flatMap(([name, child]) => (child.pid === undefined ? [] : [[name, child.pid]])));
    return { baseURL: mesh.baseURL, key, admin, pids, output: mesh.output, stop: () => mesh.stop() };
  } catch (err) {
    await mesh.stop();
    throw err;
  }
}

/**
 * Whether a baseline checkout's config takes a model's price (@gw/pricing came with the field): both
 * meshes then run one configuration, and the ledger of each prices what it records.
 */
function acceptsPrices(root: string): boolean {
  return existsSync(join(root, "packages/pricing/package.json"));
}

/** Limits far above anything the benchmark sends, so a rate limiter never shapes the numbers. */
function configYaml(upstreamURL: string, priced: boolean): string {
  // A price the ledger and budgets use (gpt-4o-mini's); a baseline checkout from before prices existed would refuse the field.
  const price = priced ? ", price: { input_per_mtok: 0.15, output_per_mtok: 0.6 }" : "";
  const unlimited = "{ requests_per_minute: 1000000000, tokens_per_minute: 1000000000000 }";
  return `
providers:
  bench: { kind: openai, base_url: "${upstreamURL}", api_key_env: BENCH_UPSTREAM_KEY, timeout_ms: 10000 }
models:
  ${benchModel}: { type: chat, routes: [{ provider: bench, model: ${benchModel} }]${price} }
plans:
  plus: ${unlimited}
  pro: ${unlimited}
  enterprise: ${unlimited}
`;
}
