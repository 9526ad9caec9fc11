import { randomBytes } from "node:crypto";
import { spawnMesh, waitForMesh } from "./mesh-processes";

/**
 * `pnpm start:mesh`: the four services as separate processes against real Postgres, Redis and
 * NATS (the local ones unless DATABASE_URL, REDIS_URL, NATS_URL say otherwise).
 */
const env = { ...process.env };
env.DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/postgres";
env.REDIS_URL ??= "redis://127.0.0.1:6379";
env.NATS_URL ??= "nats://127.0.0.1:4222";
env.GATEWAY_ADMIN_TOKEN ??= `gw_admin_${randomBytes(24).toString("base64url")}`;
env.GATEWAY_INTERNAL_SECRET ??= randomBytes(32).toString("base64url");
const num = (v: string | undefined, d: number) => (v ? Number(v) : d);
const ports = {
  public: num(env.PORT, 8080),
  admin: num(env.ADMIN_PORT, 8090),
  inference: num(env.INFERENCE_PORT, 8081),
  tools: num(env.TOOLS_PORT, 8082),
  jobs: num(env.JOBS_PORT, 8083),
};

const mesh = spawnMesh({ ports, env });
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
process.stdout.write(
  [
    "",
    "AI gateway running (mesh: four processes)",
    `  API base URL   http://127.0.0.1:${ports.public}/v1`,
    `  admin API      http://127.0.0.1:${ports.admin}/admin`,
    `  admin token    ${env.GATEWAY_ADMIN_TOKEN}`,
    "  create a workspace and key: pnpm gw workspace create dev --plan pro; pnpm gw key create <workspace-id>",
    "",
  ].join("\n") + "\n",
);
