import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";

export interface ListeningChild {
  /** What the child printed as its first line: `{"url": …}`. */
  url: string;
  pid: number;
  /** SIGTERM, then the exit code once it has exited. */
  stop(): Promise<number | null>;
}

/**
 * Runs a TypeScript entry point (through tsx) as its own process and resolves once it prints its
 * first line, `{"url": …}`, the sign that it is listening. Its stderr is the benchmark's.
 */
export async function spawnListening(entry: string, env: Record<string, string>): Promise<ListeningChild> {
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(child, "exit");
  const firstLine = (async () => {
    for await (const line of createInterface({ input: child.stdout })) return line;
    return undefined;
  })();
  const line = await Promise.race([firstLine, exited.then(() => undefined)]);
  if (line === undefined || child.pid === undefined) throw new Error(`${entry} exited before listening (${child.exitCode})`);
  const { url } = JSON.parse(line) as { url: string };
  return {
    url,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}
