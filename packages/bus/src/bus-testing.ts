import type { JobWork } from "@gw/contracts";
import type { BusLogger } from "./types";

/** Test helpers shared by the contract suite and the implementation-specific tests. */

export interface LogEntry {
  level: "info" | "warn" | "error";
  obj: Record<string, unknown>;
  msg: string;
}

export interface RecordingLogger extends BusLogger {
  entries: LogEntry[];
  has(level: LogEntry["level"], fragment: string): boolean;
}

export function createRecordingLogger(): RecordingLogger {
  const entries: LogEntry[] = [];
  const record = (level: LogEntry["level"]) => (obj: Record<string, unknown>, msg: string) => {
    entries.push({ level, obj, msg });
  };
  return {
    entries,
    info: record("info"),
    warn: record("warn"),
    error: record("error"),
    has: (level, fragment) => entries.some((e) => e.level === level && e.msg.includes(fragment)),
  };
}

/**
 * Polls until the condition holds. The shared test machine is slow and busy, so the timeout is
 * generous and only bounds a failing test; a passing test returns as soon as the condition holds.
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, description: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    await sleep(25);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

export function deferred(): Deferred {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export function jobWork(id: string, extra: Partial<JobWork> = {}): JobWork {
  return {
    job_id: `job_${id}`,
    route: "tools/webtool/research",
    identity: { workspace_id: "ws_test", key_id: "key_test", plan: "pro", models: [["*"]], tools: ["webtool"] },
    request: { format: "json", body: { input: id } },
    attempt: 1,
    ...extra,
  };
}
