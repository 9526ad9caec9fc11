import { randomBytes } from "node:crypto";
import { writeFileSync, mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeNatsNamespace } from "@gw/bus";
import { createTestDatabase, testNatsUrl, uniqueNamespace, type TestDatabase } from "@gw/testkit";
import { spawnMesh, waitForMesh, type Mesh, type MeshPorts } from "../../services/embedded/src/mesh-processes";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface RunningMesh {
  mesh: Mesh;
  ports: MeshPorts;
  baseURL: string;
  adminURL: string;
  adminToken: string;
  internalSecret: string;
  output: () => string;
  stop(): Promise<Record<string, number | null>>;
}

/**
 * Starts the four services as separate processes against this machine's Postgres and NATS (a fresh
 * database and NATS namespace per run), with the given gateway config file contents.
 */
export async function startTestMesh(configYaml: string, extraEnv: Record<string, string> = {}): Promise<RunningMesh> {
  const db: TestDatabase = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), "gw-e2e-"));
  const configPath = join(dir, "gateway.config.yaml");
  writeFileSync(configPath, configYaml);
  const ports: MeshPorts = {
    public: await freePort(),
    admin: await freePort(),
    inference: await freePort(),
    tools: await freePort(),
    jobs: await freePort(),
  };
  const adminToken = `admin_${randomBytes(16).toString("hex")}`;
  const internalSecret = randomBytes(32).toString("hex");
  const natsUrl = await testNatsUrl();
  const namespace = uniqueNamespace();
  const mesh = spawnMesh({
    ports,
    stdio: "pipe",
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: db.url,
      NATS_URL: natsUrl,
      NATS_NAMESPACE: namespace,
      GATEWAY_CONFIG: configPath,
      GATEWAY_ADMIN_TOKEN: adminToken,
      GATEWAY_INTERNAL_SECRET: internalSecret,
      LOG_LEVEL: "warn",
      ...extraEnv,
    },
  });
  let log = "";
  for (const [name, child] of Object.entries(mesh.processes)) {
    child.stdout?.on("data", (d: Buffer) => (log += `[${name}] ${d.toString()}`));
    child.stderr?.on("data", (d: Buffer) => (log += `[${name}] ${d.toString()}`));
  }
  try {
    await waitForMesh(ports, 90_000);
  } catch (err) {
    await mesh.stop();
    await db.drop();
    throw new Error(`${(err as Error).message}\n${log}`);
  }
  return {
    mesh,
    ports,
    baseURL: `http://127.0.0.1:${ports.public}/v1`,
    adminURL: `http://127.0.0.1:${ports.admin}`,
    adminToken,
    internalSecret,
    output: () => log,
    async stop() {
      const codes = await mesh.stop();
      await db.drop();
      await removeNatsNamespace(natsUrl, namespace);
      return codes;
    },
  };
}

/** A small admin API client for tests. */
export function adminClient(adminURL: string, token: string) {
  return async <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${adminURL}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as T;
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
}

export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw last ?? new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}
