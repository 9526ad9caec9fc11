import { z } from "zod";
import { defaultConfigPath, logLevel, parseEnv, port, secret } from "@gw/config";

/** How long the ledger keeps records and roll-ups, shared by the usage process and the embedded default. */
export const UsageRetentionEnv = z.object({
  GATEWAY_USAGE_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(400),
});
export type UsageRetentionEnv = z.infer<typeof UsageRetentionEnv>;

const UsageEnv = UsageRetentionEnv.extend({
  USAGE_PORT: port(8084),
  HOST: z.string().default("0.0.0.0"),
  GATEWAY_INTERNAL_SECRET: secret,
  GATEWAY_CONFIG: z.string().min(1).default(defaultConfigPath()),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }),
  NATS_URL: z.string().min(1),
  /** Path of a NATS credentials file (a .creds file or an NKey user seed), read by main.ts at start. */
  NATS_CREDS: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(1).optional()),
  NATS_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]+$/)
    .default("gw"),
  LOG_LEVEL: logLevel,
});
export type UsageEnv = z.infer<typeof UsageEnv>;

export function loadUsageEnv(env: Record<string, string | undefined>): UsageEnv {
  return parseEnv(UsageEnv, env);
}
