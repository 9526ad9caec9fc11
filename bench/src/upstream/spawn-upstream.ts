import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { statsPath, type FixedUpstreamOptions } from "./fixed-upstream";

export interface UpstreamProcess {
  /** OpenAI-style base URL, ending in /v1. */
  readonly url: string;
  readonly pid: number;
  /** Chat requests the upstream has answered so far. */
  answered(): Promise<number>;
  /** SIGTERM, then the exit code once it has exited. */
  stop(): Promise<number | null>;
}

/**
 * Starts upstream-main.ts as a child process and resolves once it is listening. A provider runs on
 * another machine, so the direct path must cross a process boundary too, as the gateway's hops do;
 * and later load scenarios must not share the load generator's event loop with the upstream.
 */
export async function spawnUpstream(options: FixedUpstreamOptions): Promise<UpstreamProcess> {
  const entry = fileURLToPath(new URL("./upstream-main.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      BENCH_UPSTREAM_KEY: options.apiKey,
      BENCH_STREAM_PIECES: options.streamPieces?.toString() ?? "",
      BENCH_FRAME_INTERVAL_MS: options.frameIntervalMs?.toString() ?? "",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(child, "exit");
  const firstLine = (async () => {
    for await (const line of createInterface({ input: child.stdout })) return line;
    return undefined;
  })();
  const line = await Promise.race([firstLine, exited.then(() => undefined)]);
  if (line === undefined || child.pid === undefined) throw new Error(`upstream process exited before listening (${child.exitCode})`);
  const { url } = JSON.parse(line) as { url: string };
  return {
    url,
    pid: child.pid,
    async answered() {
      const res = await fetch(new URL(statsPath, url));
      return ((await res.json()) as { answered: number }).answered;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}
