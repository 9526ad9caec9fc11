import { z } from "zod";
import { defaultConfigPath, logLevel, parseEnv, port, secret } from "@gw/config";

/** The inference process's environment. Provider credentials are read by the names the config file gives. */
const InferenceEnv = z.object({
  INFERENCE_PORT: port(8081),
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
  GATEWAY_BODY_LIMIT_MB: z.coerce.number().positive().max(512).default(32),
  GATEWAY_JOB_CONCURRENCY: z.coerce.number().int().min(0).max(1024).default(16),
  /** The jobs service: a job's request or result too large for a bus message goes through it. */
  JOBS_URL: z.url().default("http://127.0.0.1:8083"),
  LOG_LEVEL: logLevel,
});
export type InferenceEnv = z.infer<typeof InferenceEnv>;

export function loadInferenceEnv(env: Record<string, string | undefined>): InferenceEnv {
  return parseEnv(InferenceEnv, env);
}
