import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "@gw/config";
import { freePort } from "@gw/testkit";
import { ensureBundles } from "./bundles";

/**
 * The embedded gateway (`pnpm start`) or its mesh (`pnpm start:mesh`) as its own process, with its
 * own environment only, stdout and stderr captured together.
 */
export interface GatewayProcess {
  child: ChildProcess;
  pid: number;
  ports: { public: number; admin: number };
  baseURL: string;
  adminURL: string;
  output(): string;
  /** Resolves with the exit code once the process is gone. */
  exited: Promise<number | null>;
  /** Resolves with the banner once it is printed; rejects with the output if the process exits first. */
  banner(timeoutMs?: number): Promise<string>;
  /** SIGTERM (or the given signal) and wait for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * `via: "tsx"` runs the entry point as `pnpm start` does, through tsx, for the tests of what an
 * operator sees; the default runs its bundle (bundles.ts), which starts in a fraction of the CPU,
 * for the tests of what the gateway does with its data folder.
 */
export async function spawnGateway(
  entry: "main" | "mesh",
  env: Record<string, string | undefined>,
  { via = "bundle" }: { via?: "tsx" | "bundle" } = {},
): Promise<GatewayProcess> {
  const ports = { public: await freePort(), admin: await freePort() };
  if (via === "bundle") await ensureBundles();
  const args =
    via === "tsx"
      ? ["--import", "tsx", join(repoRoot(), "services", "embedded", "src", `${entry}.ts`)]
      : ["--enable-source-maps", join(repoRoot(), "services", "embedded", "dist", `${entry}.js`)];
  const child = spawn(process.execPath, args, {
    cwd: repoRoot(),
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(ports.public), ADMIN_PORT: String(ports.admin), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  // "AI gateway 0.1.0 (3f2a9c1d0b7e) running (…)": the release and commit, then what runs.
  const bannerStart = /AI gateway \S+ \(\S+\) running/;
  return {
    child,
    pid: child.pid as number,
    ports,
    baseURL: `http://127.0.0.1:${ports.public}/v1`,
    adminURL: `http://127.0.0.1:${ports.admin}`,
    output: () => output,
    exited,
    async banner(timeoutMs = 90_000) {
      const deadline = Date.now() + timeoutMs;
      let gone = false;
      void exited.then(() => (gone = true));
      for (;;) {
        const at = output.search(bannerStart);
        // The banner ends with an empty line.
        const end = at < 0 ? -1 : output.indexOf("\n\n", at);
        if (end >= 0) return output.slice(at, end);
        if (gone || Date.now() > deadline) throw new Error(`no banner (${gone ? `exited ${child.exitCode}` : "timed out"}):\n${output}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** A minimal gateway config over one OpenAI-compatible upstream. */
export function openAIConfig(providers: Record<string, { url: string; keyEnv: string }>): string {
  const names = Object.keys(providers);
  return [
    "providers:",
    ...names.map((name) => `  ${name}: { kind: openai, base_url: "${providers[name]?.url}", api_key_env: ${providers[name]?.keyEnv} }`),
    "models:",
    ...names.map((name) => `  chat-${name}: { type: chat, routes: [{ provider: ${name}, model: gpt-4o-mini }] }`),
    "plans:",
    "  plus:       { requests_per_minute: 600,  tokens_per_minute: 1000000 }",
    "  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }",
    "  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }",
    "",
  ].join("\n");
}
