import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@gw/config";

export const meshServices = ["inference", "tools", "jobs", "usage", "console", "ingress"] as const;
export type MeshServiceName = (typeof meshServices)[number];

/**
 * Node's own options a service runs with, on its command line (V8's are refused in NODE_OPTIONS);
 * its image's CMD carries the same (deploy/Dockerfile). The usage service works in bursts, a batch
 * of records now and then: between them V8's memory reducer would run full collections to shrink a
 * heap the next batch grows again, and a young generation left to start small is collected several
 * times per batch while the batch's records are still alive. At a light load each cost it a large
 * share of its CPU (docs/usage-ledger.md).
 */
export const serviceNodeFlags: Partial<Record<MeshServiceName, readonly string[]>> = {
  usage: ["--no-memory-reducer", "--min-semi-space-size=16"],
};

export interface MeshPorts {
  public: number;
  admin: number;
  inference: number;
  tools: number;
  jobs: number;
  usage: number;
  console: number;
}

export interface MeshOptions {
  ports: MeshPorts;
  /** Shared environment: infrastructure URLs, secrets, GATEWAY_CONFIG, provider credentials. */
  env: Record<string, string | undefined>;
  /** Added for one service only, over the shared environment (its own NATS_CREDS, say). */
  serviceEnv?: Partial<Record<MeshServiceName, Record<string, string>>>;
  /** Where each child's output goes; the default is this process's stdout/stderr. */
  stdio?: "inherit" | "pipe";
  /**
   * The checkout whose services to start (its own entry points, node_modules and working
   * directory); the default is this repository. The benchmark starts an older checkout this way.
   */
  root?: string;
  /**
   * Start each service's bundle (services/<name>/dist/main.js, made by `pnpm build`) with
   * `node --enable-source-maps`, as the images do, instead of its sources through tsx.
   */
  built?: boolean;
}

export interface Mesh {
  /** The services started: all of meshServices, less those an older checkout does not have. */
  services: readonly MeshServiceName[];
  /** The current process of each service (replaced by `respawn`). */
  processes: Record<MeshServiceName, ChildProcess>;
  /** Starts a service again after it exited (a crash test's kill -9), with the same environment. */
  respawn(name: MeshServiceName): ChildProcess;
  /** Sends SIGTERM to every process and waits for all to exit; returns their exit codes. */
  stop(): Promise<Record<MeshServiceName, number | null>>;
}

/** Starts the six services as separate processes, each through its own entry point. */
export function spawnMesh(options: MeshOptions): Mesh {
  const { ports } = options;
  const base = {
    ...options.env,
    HOST: "127.0.0.1",
    PORT: String(ports.public),
    ADMIN_PORT: String(ports.admin),
    INFERENCE_PORT: String(ports.inference),
    TOOLS_PORT: String(ports.tools),
    JOBS_PORT: String(ports.jobs),
    USAGE_PORT: String(ports.usage),
    CONSOLE_PORT: String(ports.console),
    INFERENCE_URL: `http://127.0.0.1:${ports.inference}`,
    TOOLS_URL: `http://127.0.0.1:${ports.tools}`,
    JOBS_URL: `http://127.0.0.1:${ports.jobs}`,
    USAGE_URL: `http://127.0.0.1:${ports.usage}`,
    CONSOLE_URL: `http://127.0.0.1:${ports.console}`,
    INGRESS_ADMIN_URL: `http://127.0.0.1:${ports.admin}`,
    GATEWAY_PUBLIC_URL: options.env.GATEWAY_PUBLIC_URL ?? `http://127.0.0.1:${ports.public}`,
  };
  const root = options.root ?? repoRoot();
  // In the order its image gives them (ENTRYPOINT, then CMD).
  const entry = (name: MeshServiceName) =>
    options.built
      ? ["--enable-source-maps", ...(serviceNodeFlags[name] ?? []), join(root, "services", name, "dist", "main.js")]
      : [...(serviceNodeFlags[name] ?? []), "--import", "tsx", join(root, "services", name, "src", "main.ts")];
  const start = (name: MeshServiceName) =>
    spawn(process.execPath, entry(name), {
      cwd: root,
      env: { ...base, ...options.serviceEnv?.[name] },
      stdio: options.stdio === "pipe" ? ["ignore", "pipe", "pipe"] : "inherit",
    });
  // An older checkout (the bench's baseline) may predate a service: it runs without it.
  const present = meshServices.filter((name) =>
    existsSync(options.built ? join(root, "services", name, "dist", "main.js") : join(root, "services", name, "src", "main.ts")),
  );
  const processes = Object.fromEntries(present.map((name) => [name, start(name)])) as Record<MeshServiceName, ChildProcess>;
  return {
    services: present,
    processes,
    respawn(name) {
      processes[name] = start(name);
      return processes[name];
    },
    async stop() {
      const codes = await Promise.all(
        present.map(
          (name) =>
            new Promise<[MeshServiceName, number | null]>((resolve) => {
              const child = processes[name];
              if (child.exitCode !== null || child.signalCode !== null) return resolve([name, child.exitCode]);
              child.once("exit", (code) => resolve([name, code]));
              child.kill("SIGTERM");
            }),
        ),
      );
      return Object.fromEntries(codes) as Record<MeshServiceName, number | null>;
    },
  };
}

/** Resolves when every service answers /readyz (ingress on its public port), or rejects after timeoutMs. */
export async function waitForMesh(ports: MeshPorts, timeoutMs = 60_000, services: readonly MeshServiceName[] = meshServices): Promise<void> {
  const internal = (["inference", "tools", "jobs", "usage", "console"] as const).filter((name) => services.includes(name));
  const urls = [...internal.map((name) => ports[name]), ports.public].map((p) => `http://127.0.0.1:${p}/readyz`);
  const deadline = Date.now() + timeoutMs;
  for (const url of urls) {
    for (;;) {
      const ok = await fetch(url)
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`mesh not ready: ${url}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
