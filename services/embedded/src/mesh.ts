import { join } from "node:path";
import { repoRoot } from "@gw/config";
import { meshBanner } from "./banner";
import { spawnMesh, waitForMesh } from "./mesh-processes";
import { generateAdminToken, generateInternalSecret, secretFileNames, suppliedOrKept, type ResolvedSecret } from "./secret-file";

/**
 * `pnpm start:mesh`: the six services as separate processes against real Postgres, Redis and
 * NATS (the local ones unless DATABASE_URL, REDIS_URL, NATS_URL say otherwise).
 */
const env = { ...process.env };
env.DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/postgres";
env.REDIS_URL ??= "redis://127.0.0.1:6379";
env.NATS_URL ??= "nats://127.0.0.1:4222";
// Secrets not supplied are generated once into 0600 files in the data folder (as `pnpm start`
// does) and kept across restarts; a supplied one is never written or shown.
const dataDir = env.GATEWAY_DATA_DIR || join(repoRoot(), ".data");
let adminToken: ResolvedSecret;
try {
  adminToken = suppliedOrKept(env.GATEWAY_ADMIN_TOKEN, dataDir, secretFileNames.adminToken, generateAdminToken);
  env.GATEWAY_ADMIN_TOKEN = adminToken.value;
  env.GATEWAY_INTERNAL_SECRET = suppliedOrKept(env.GATEWAY_INTERNAL_SECRET, dataDir, secretFileNames.internalSecret, generateInternalSecret).value;
} catch (err) {
  process.stderr.write(`cannot keep the mesh's secrets in the data folder ${dataDir}: ${(err as Error).message}\n`);
  process.exit(1);
}
const num = (v: string | undefined, d: number) => (v ? Number(v) : d);
const ports = {
  public: num(env.PORT, 8080),
  admin: num(env.ADMIN_PORT, 8090),
  inference: num(env.INFERENCE_PORT, 8081),
  tools: num(env.TOOLS_PORT, 8082),
  jobs: num(env.JOBS_PORT, 8083),
  usage: num(env.USAGE_PORT, 8084),
  console: num(env.CONSOLE_PORT, 8085),
};

// Run as a bundle (dist/mesh.js, from `pnpm build`), it starts the services' bundles too.
const mesh = spawnMesh({ ports, env, built: import.meta.url.endsWith(".js") });
for (const [name, child] of Object.entries(mesh.processes)) {
  child.once("exit", (code, signal) => {
    if (!stopping) {
      process.stderr.write(`${name} exited (${code ?? signal}); stopping the mesh\n`);
      void shutdown(1);
    }
  });
}
let stopping = false;
async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  await mesh.stop();
  process.exit(code);
}
process.once("SIGINT", () => void shutdown(0));
process.once("SIGTERM", () => void shutdown(0));

await waitForMesh(ports);
process.stdout.write(meshBanner({ url: `http://127.0.0.1:${ports.public}`, adminUrl: `http://127.0.0.1:${ports.admin}`, adminToken }));
