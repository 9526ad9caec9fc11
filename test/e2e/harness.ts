import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { removeNatsNamespace } from "@gw/bus";
import { repoRoot } from "@gw/config";
import { createTestDatabase, freePort, testNatsUrl, testRedisUrl, uniqueNamespace, uniquePrefix, type TestDatabase } from "@gw/testkit";
import { spawnMesh, waitForMesh, type Mesh, type MeshPorts, type MeshServiceName } from "../../services/embedded/src/mesh-processes";
import { ensureBundles } from "./bundles";

export interface RunningMesh {
  mesh: Mesh;
  ports: MeshPorts;
  baseURL: string;
  adminURL: string;
  adminToken: string;
  internalSecret: string;
  /** The environment every process got (ports aside). */
  env: Record<string, string | undefined>;
  output: () => string;
  /** kill -9 one service, wait for it to be gone; then `respawn` it. */
  crash(name: MeshServiceName): Promise<void>;
  /** Starts a crashed service again and waits until it is ready. */
  respawn(name: MeshServiceName): Promise<void>;
  stop(): Promise<Record<string, number | null>>;
}

/**
 * Starts the four services as separate processes against this machine's Postgres, Redis and NATS
 * (a fresh database, Redis key prefix and NATS namespace per run), with the given config file.
 */
export async function startTestMesh(
  configYaml: string,
  extraEnv: Record<string, string> = {},
  options: {
    serviceEnv?: Partial<Record<MeshServiceName, Record<string, string>>>;
    /** Another checkout whose services to start instead of this repository's (spawnMesh's `root`). */
    root?: string;
    /**
     * Start the services' bundles (`pnpm build`) rather than their sources (spawnMesh's `built`). Default:
     * this checkout's bundles, built when stale; another checkout's (`root`) sources.
     */
    built?: boolean;
  } = {},
): Promise<RunningMesh> {
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
    usage: await freePort(),
    console: await freePort(),
  };
  const adminToken = `admin_${randomBytes(16).toString("hex")}`;
  const internalSecret = randomBytes(32).toString("hex");
  const natsUrl = await testNatsUrl();
  const namespace = uniqueNamespace();
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATABASE_URL: db.url,
    NATS_URL: natsUrl,
    NATS_NAMESPACE: namespace,
    REDIS_URL: await testRedisUrl(),
    GATEWAY_REDIS_PREFIX: uniquePrefix("e2e"),
    GATEWAY_CONFIG: configPath,
    GATEWAY_ADMIN_TOKEN: adminToken,
    GATEWAY_INTERNAL_SECRET: internalSecret,
    LOG_LEVEL: "warn",
    ...extraEnv,
  };
  // This checkout's services run from their bundles, as the images run them (see bundles.ts).
  const built = options.built ?? options.root === undefined;
  if (built && options.root === undefined) await ensureBundles();
  const mesh = spawnMesh({ ports, stdio: "pipe", env, serviceEnv: options.serviceEnv, root: options.root, built });
  let log = "";
  const capture = (name: string, child: import("node:child_process").ChildProcess) => {
    child.stdout?.on("data", (d: Buffer) => (log += `[${name}] ${d.toString()}`));
    child.stderr?.on("data", (d: Buffer) => (log += `[${name}] ${d.toString()}`));
  };
  for (const [name, child] of Object.entries(mesh.processes)) capture(name, child);
  try {
    await waitForMesh(ports, 90_000, mesh.services);
  } catch (err) {
    await mesh.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${(err as Error).message}\n${log}`);
  }
  return {
    mesh,
    ports,
    baseURL: `http://127.0.0.1:${ports.public}/v1`,
    adminURL: `http://127.0.0.1:${ports.admin}`,
    adminToken,
    internalSecret,
    env,
    output: () => log,
    async crash(name) {
      const child = mesh.processes[name];
      if (child.exitCode !== null || child.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGKILL");
      });
    },
    async respawn(name) {
      capture(name, mesh.respawn(name));
      const port = name === "ingress" ? ports.public : ports[name];
      await eventually(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, 60_000);
    },
    async stop() {
      const codes = await mesh.stop();
      await db.drop();
      await removeNatsNamespace(natsUrl, namespace);
      rmSync(dir, { recursive: true, force: true });
      return codes;
    },
  };
}

/**
 * A small admin API client for tests. Each call has a connection of its own: fetch's pooled one,
 * left idle while a slow test ran, could be reused just as the server closed it at its keep-alive
 * timeout (65 s), and a POST written into that close fails ("other side closed") with nothing to
 * retry. Admin calls are few, so a new connection each costs nothing that matters.
 */
export function adminClient(adminURL: string, token: string) {
  return async <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(`${adminURL}${path}`, {
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          ...(payload === undefined ? {} : { "content-length": Buffer.byteLength(payload) }),
        },
      });
      req.once("error", reject);
      req.once("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.once("error", reject);
        res.once("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      });
      req.end(payload);
    });
    const json = JSON.parse(text) as T;
    if (status < 200 || status > 299) throw new Error(`${method} ${path} → ${status} ${JSON.stringify(json)}`);
    return json;
  };
}

export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw last ?? new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface IngressReplica {
  baseURL: string;
  adminURL: string;
  output: () => string;
  stop(): Promise<number | null>;
}

/** A second ingress process in front of the same mesh: same database, Redis, NATS and backends. */
export async function startIngressReplica(gw: RunningMesh, extraEnv: Record<string, string> = {}): Promise<IngressReplica> {
  const [port, adminPort] = [await freePort(), await freePort()];
  await ensureBundles();
  const child = spawn(process.execPath, ["--enable-source-maps", join(repoRoot(), "services", "ingress", "dist", "main.js")], {
    cwd: repoRoot(),
    env: {
      ...gw.env,
      HOST: "127.0.0.1",
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      INFERENCE_URL: `http://127.0.0.1:${gw.ports.inference}`,
      TOOLS_URL: `http://127.0.0.1:${gw.ports.tools}`,
      JOBS_URL: `http://127.0.0.1:${gw.ports.jobs}`,
      USAGE_URL: `http://127.0.0.1:${gw.ports.usage}`,
      ...extraEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout?.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (log += d.toString()));
  const stop = () =>
    new Promise<number | null>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
      child.once("exit", (code) => resolve(code));
      child.kill("SIGTERM");
    });
  try {
    await eventually(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, 60_000);
  } catch (err) {
    await stop();
    throw new Error(`second ingress not ready: ${(err as Error).message}\n${log}`);
  }
  return { baseURL: `http://127.0.0.1:${port}/v1`, adminURL: `http://127.0.0.1:${adminPort}`, output: () => log, stop };
}

/** Where Debian's nats-server is: the tests that kill NATS run a private one and skip without it. */
export const NATS_BIN = "/usr/sbin/nats-server";

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * A private nats-server with JetStream on `port`, keeping its store in `storeDir`, so that a test
 * can kill it (and start it again on the same store) without any other test seeing it go.
 */
export function startPrivateNats(port: number, storeDir: string): Promise<ChildProcess> {
  return new Promise<ChildProcess>((resolve, reject) => {
    const child = spawn(NATS_BIN, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], { stdio: "ignore" });
    child.once("error", reject);
    eventually(() => portOpen(port), 10_000).then(() => resolve(child), reject);
  });
}
