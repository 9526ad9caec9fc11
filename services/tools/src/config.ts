import { z } from "zod";
import { defaultConfigPath, logLevel, parseEnv, port, secret } from "@gw/config";

/** Research jobs: how many run at once in a process, and the first wait between reads of a task. */
export const ResearchEnv = z.object({
  GATEWAY_JOB_CONCURRENCY: z.coerce.number().int().min(0).max(1024).default(16),
  GATEWAY_RESEARCH_POLL_MS: z.coerce.number().int().min(50).max(60_000).default(2_000),
});
export type ResearchEnv = z.infer<typeof ResearchEnv>;

/** The wait between reads starts at the configured value and grows to 15 s (or the value, if larger). */
export function researchPolling(env: ResearchEnv) {
  return { initialMs: env.GATEWAY_RESEARCH_POLL_MS, maxMs: Math.max(env.GATEWAY_RESEARCH_POLL_MS, 15_000) };
}

const ToolsEnv = ResearchEnv.extend({
  TOOLS_PORT: port(8082),
  HOST: z.string().default("0.0.0.0"),
  GATEWAY_INTERNAL_SECRET: secret,
  GATEWAY_CONFIG: z.string().min(1).default(defaultConfigPath()),
  NATS_URL: z.string().min(1),
  /** Path of a NATS credentials file (a .creds file or an NKey user seed), read by main.ts at start. */
  NATS_CREDS: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(1).optional()),
  NATS_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]+$/)
    .default("gw"),
  LOG_LEVEL: logLevel,
});
export type ToolsEnv = z.infer<typeof ToolsEnv>;

export function loadToolsEnv(env: Record<string, string | undefined>): ToolsEnv {
  return parseEnv(ToolsEnv, env);
}
