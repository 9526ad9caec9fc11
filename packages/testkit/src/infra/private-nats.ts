import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, nkeyAuthenticator } from "nats";
import type { NatsConnection } from "nats";
import { freePort } from "./free-port";
import type { NatsOperatorSetup } from "./nats-jwt";

/** How the private server checks clients; no `auth` means it lets everyone in. */
export type PrivateNatsAuth =
  | { user: string; password: string }
  | { token: string }
  /** Users by NKey public key (`U…`); each client proves it holds the seed. */
  | { nkeys: string[] }
  /** Operator (JWT) mode, from createNatsOperator(); clients connect with its `.creds` files. */
  | { operator: NatsOperatorSetup }
  /**
   * Configuration text of the test's own (say the shipped deploy/nats/gateway-auth.conf through an
   * `include`): `files` are written next to the generated config first, `env` is the server's
   * environment, which nats-server reads for `$VARIABLES` the file does not define.
   */
  | { config: string; files?: Record<string, string>; env?: Record<string, string> };

export interface PrivateNats {
  /** `nats://127.0.0.1:<port>`, without credentials. */
  url: string;
  port: number;
  /** What the server has logged so far (refused logins, permission violations). */
  output(): string;
  /** kill -9 the server (its store stays). */
  crash(): Promise<void>;
  /** Starts it again (after a crash, or kills it first) on the same port with the same store. */
  restart(): Promise<void>;
  /** Stops the server and removes its store and configuration. Safe to call twice. */
  stop(): Promise<void>;
}

// Test infrastructure reads the environment directly, as testNatsUrl does.
const BIN = process.env.NATS_SERVER_BIN ?? (existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server");

/** Whether a nats-server binary is there to start (tests that need one skip without it). */
export function natsServerAvailable(): boolean {
  return spawnSync(BIN, ["--version"]).status === 0;
}

/**
 * A nats-server of the test's own, with JetStream, on a free loopback port and a temporary store,
 * and the given authentication: for tests of credentials and permissions, which the shared server
 * (no auth) cannot show. Resolves once the server says it is ready.
 */
export async function startPrivateNats(options: { auth?: PrivateNatsAuth; startTimeoutMs?: number } = {}): Promise<PrivateNats> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "gw-private-nats-"));
  const auth = options.auth;
  if (auth && "files" in auth) for (const [name, text] of Object.entries(auth.files ?? {})) writeFileSync(join(dir, name), text);
  const configPath = join(dir, "nats-server.conf");
  writeFileSync(configPath, `${authConfig(auth)}\n`, { mode: 0o600 });
  const args = ["-c", configPath, "-a", "127.0.0.1", "-p", String(port), "-js", "-sd", join(dir, "store")];
  const env = { PATH: process.env.PATH, ...(auth && "env" in auth ? auth.env : {}) };
  let output = "";
  let server: Launched;
  try {
    server = await launch(args, env, options.startTimeoutMs ?? 20_000, (text) => (output += text));
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`private nats-server (${BIN}) failed to start: ${(err as Error).message}\n${output}`);
  }
  let stopping: Promise<void> | undefined;
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    output: () => output,
    async crash() {
      await server.kill("SIGKILL");
    },
    async restart() {
      await server.kill("SIGKILL");
      server = await launch(args, env, options.startTimeoutMs ?? 20_000, (text) => (output += text));
    },
    stop() {
      stopping ??= (async () => {
        await server.kill("SIGTERM");
        rmSync(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

interface Launched {
  /** Sends the signal unless the server has already gone, and waits for it to exit. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** Starts the server and resolves once it says it is ready. */
async function launch(args: string[], env: Record<string, string | undefined>, timeoutMs: number, log: (text: string) => void): Promise<Launched> {
  const child = spawn(BIN, args, { stdio: ["ignore", "pipe", "pipe"], env });
  // If the test process dies without stop(), do not leave a server behind.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const kill = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      await exited;
    }
    process.off("exit", killOnExit);
  };
  let seen = "";
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("did not say it was ready")), timeoutMs);
      const onData = (chunk: Buffer) => {
        seen += chunk.toString();
        log(chunk.toString());
        if (seen.includes("Server is ready")) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      child.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`exited with ${child.exitCode ?? child.signalCode}`));
      });
    });
  } catch (err) {
    await kill("SIGKILL");
    throw err;
  }
  return { kill };
}

/**
 * A plain client connection, as something outside the gateway would open (no reconnects), with an
 * NKey user seed or none: for tests of what a server lets in and through.
 */
export function connectAsClient(url: string, seed?: string): Promise<NatsConnection> {
  return connect({
    servers: url,
    reconnect: false,
    ...(seed ? { authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)) } : {}),
  });
}

function authConfig(auth: PrivateNatsAuth | undefined): string {
  if (!auth) return "";
  const q = (s: string) => JSON.stringify(s);
  if ("user" in auth) return `authorization { user: ${q(auth.user)}, password: ${q(auth.password)} }`;
  if ("token" in auth) return `authorization { token: ${q(auth.token)} }`;
  if ("nkeys" in auth) return `authorization { users: [ ${auth.nkeys.map((k) => `{ nkey: ${q(k)} }`).join(", ")} ] }`;
  if ("operator" in auth) return auth.operator.config;
  return auth.config;
}
