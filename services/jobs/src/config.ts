import { z } from "zod";
import { defaultConfigPath, logLevel, parseEnv, port, secret } from "@gw/config";

/**
 * How async jobs are run, shared by the jobs process and the embedded default: an attempt's
 * deadline, the attempts before a job fails, how long finished jobs are kept, how often the sweep
 * that enforces all three runs.
 */
export const JobTimingEnv = z.object({
  GATEWAY_JOB_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(600_000),
  GATEWAY_JOB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  GATEWAY_JOB_RETENTION_HOURS: z.coerce.number().positive().default(168),
  GATEWAY_JOB_SWEEP_MS: z.coerce.number().int().min(100).default(1_000),
});
export type JobTimingEnv = z.infer<typeof JobTimingEnv>;

export function jobTimings(env: JobTimingEnv) {
  return {
    attemptTimeoutMs: env.GATEWAY_JOB_TIMEOUT_MS,
    maxAttempts: env.GATEWAY_JOB_MAX_ATTEMPTS,
    retentionMs: Math.round(env.GATEWAY_JOB_RETENTION_HOURS * 3_600_000),
    sweepIntervalMs: env.GATEWAY_JOB_SWEEP_MS,
  };
}

const JobsEnv = JobTimingEnv.extend({
  JOBS_PORT: port(8083),
  HOST: z.string().default("0.0.0.0"),
  GATEWAY_INTERNAL_SECRET: secret,
  /** Seals enterprise workspaces' own provider credentials at rest while their jobs can run (as ingress's). */
  GATEWAY_MASTER_KEY: z.string().min(32, "must be at least 32 characters").optional(),
  GATEWAY_CONFIG: z.string().min(1).default(defaultConfigPath()),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }),
  NATS_URL: z.string().min(1),
  /** Path of a NATS credentials file (a .creds file or an NKey user seed), read by main.ts at start. */
  NATS_CREDS: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(1).optional()),
  NATS_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]+$/)
    .default("gw"),
  GATEWAY_BODY_LIMIT_MB: z.coerce.number().positive().max(512).default(32),
  /** Ingress's admin port: it admits batches' lines under their keys' limits and budgets. */
  INGRESS_ADMIN_URL: z.url().default("http://127.0.0.1:8090"),
  LOG_LEVEL: logLevel,
});
export type JobsEnv = z.infer<typeof JobsEnv>;

export function loadJobsEnv(env: Record<string, string | undefined>): JobsEnv {
  return parseEnv(JobsEnv, env);
}
