import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "@gw/testkit";

/**
 * The published Portkey gateway the benchmark compares against. Installed at bench time into a
 * git-ignored cache (never a dependency of the product); 1.15.2 is the newest 1.x and runs on Node 20.
 */
export const portkeyPackage = "@portkey-ai/gateway";
export const portkeyVersion = "1.15.2";
/** bench/.portkey: a plain npm prefix, listed in .gitignore. */
export const defaultPortkeyDir = fileURLToPath(new URL("../../.portkey", import.meta.url));

/** Written after a complete install; a missing or different marker means "install again". */
const markerFile = "installed.json";

export function portkeyEntry(dir: string): string {
  return join(dir, "node_modules", ...portkeyPackage.split("/"), "build", "start-server.js");
}

/** The version a finished install left in `dir`, or undefined (none, interrupted, or files missing). */
export function installedPortkeyVersion(dir: string): string | undefined {
  try {
    const marker = JSON.parse(readFileSync(join(dir, markerFile), "utf8")) as { version?: unknown };
    return typeof marker.version === "string" && existsSync(portkeyEntry(dir)) ? marker.version : undefined;
  } catch {
    return undefined;
  }
}

export interface EnsurePortkeyOptions {
  dir?: string;
  version?: string;
  progress?(message: string): void;
}

/**
 * Installs the package into `dir` unless that version is already there; returns the server's entry
 * file. Install scripts are skipped: the package's only one is patch-package for its own
 * development, and the published build needs no patching.
 */
export async function ensurePortkey(options: EnsurePortkeyOptions = {}): Promise<string> {
  const dir = options.dir ?? defaultPortkeyDir;
  const version = options.version ?? portkeyVersion;
  if (installedPortkeyVersion(dir) === version) return portkeyEntry(dir);

  options.progress?.(`installing ${portkeyPackage}@${version} into ${dir}`);
  mkdirSync(dir, { recursive: true });
  const args = ["install", "--prefix", dir, "--no-save", "--no-package-lock", "--ignore-scripts", "--no-audit", "--no-fund", `${portkeyPackage}@${version}`];
  const npm = spawn("npm", args, { stdio: ["ignore", "pipe", "pipe"] });
  const output = tail();
  npm.stdout.on("data", output.add);
  npm.stderr.on("data", output.add);
  const [code] = (await Promise.race([once(npm, "exit"), once(npm, "error").then(([err]) => Promise.reject(err as Error))])) as [number | null];
  if (code !== 0) throw new Error(`npm ${args.join(" ")} exited with ${code}:\n${output.text()}`);
  if (!existsSync(portkeyEntry(dir))) throw new Error(`npm installed ${portkeyPackage}@${version} but ${portkeyEntry(dir)} is missing`);
  writeFileSync(join(dir, markerFile), `${JSON.stringify({ package: portkeyPackage, version })}\n`);
  return portkeyEntry(dir);
}

/**
 * What makes Portkey forward an OpenAI chat request to our upstream: the provider's request and
 * answer formats (`x-portkey-provider`), the provider's base URL replaced by the upstream's
 * (`x-portkey-custom-host`, the base URL with /v1, to which Portkey appends /chat/completions), and
 * the provider key as the client would send it to OpenAI.
 */
export function portkeyHeaders(upstreamURL: string, upstreamKey: string): Record<string, string> {
  return {
    "x-portkey-provider": "openai",
    "x-portkey-custom-host": upstreamURL,
    authorization: `Bearer ${upstreamKey}`,
  };
}

export interface PortkeyOptions extends EnsurePortkeyOptions {
  /** OpenAI-style base URL of the benchmark's upstream, ending in /v1. */
  upstreamURL: string;
  upstreamKey: string;
  /** More environment for Portkey's process (e.g. NODE_OPTIONS to profile it). */
  env?: Record<string, string>;
  /** How long to wait for it to answer (default 30 s). */
  startTimeoutMs?: number;
}

export interface PortkeyProcess {
  /** OpenAI-style base URL, ending in /v1. */
  baseURL: string;
  pid: number;
  version: string;
  /** The request headers that route a chat request to the upstream (see portkeyHeaders). */
  headers: Record<string, string>;
  /** The command that started it, for the report. */
  command: string[];
  /** What it printed (the last 16 KB). */
  output(): string;
  /** SIGTERM (SIGKILL after 5 s), then the exit code once it has exited: 0 after a clean stop. */
  stop(): Promise<number | null>;
}

/**
 * Installs if needed, then starts Portkey's Node build as its own process, headless (no log UI), on
 * a free loopback port, and resolves once it answers. A failed start stops what it started.
 */
export async function startPortkey(options: PortkeyOptions): Promise<PortkeyProcess> {
  const version = options.version ?? portkeyVersion;
  const entry = await ensurePortkey(options);
  const port = await freePort();
  const preload = fileURLToPath(new URL("./portkey-preload.mjs", import.meta.url));
  const command = [process.execPath, "--import", preload, entry, `--port=${port}`, "--headless"];
  const child = spawn(command[0] as string, command.slice(1), {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: "production",
      // Portkey refuses custom hosts outside this list unless they are public addresses.
      TRUSTED_CUSTOM_HOSTS: new URL(options.upstreamURL).hostname,
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = tail();
  child.stdout.on("data", output.add);
  child.stderr.on("data", output.add);
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;

  const stop = async (): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited.finally(() => clearTimeout(timer));
    }
    return child.exitCode;
  };

  const origin = `http://127.0.0.1:${port}`;
  try {
    await waitUntilAnswering(origin, exited, options.startTimeoutMs ?? 30_000);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${output.text()}`);
  }
  return {
    baseURL: `${origin}/v1`,
    pid: child.pid as number,
    version,
    headers: portkeyHeaders(options.upstreamURL, options.upstreamKey),
    command: command.map((part) => part.replace(`${process.cwd()}/`, "")),
    output: output.text,
    stop,
  };
}

/** Polls Portkey's `GET /` ("AI Gateway says hey!") until it answers 200, the process exits, or time runs out. */
async function waitUntilAnswering(origin: string, exited: Promise<unknown>, timeoutMs: number): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (gone) throw new Error("portkey exited before answering");
    try {
      const res = await fetch(`${origin}/`, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`portkey did not answer on ${origin} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Keeps the last 16 KB of a process's output, for error messages. */
function tail(limit = 16_384) {
  let text = "";
  return {
    add: (chunk: Buffer) => {
      text = (text + chunk.toString("utf8")).slice(-limit);
    },
    text: () => text,
  };
}
