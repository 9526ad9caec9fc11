import { join } from "node:path";
import { z } from "zod";
import { defaultConfigPath, logLevel, optionalUrl, parseEnv, port, repoRoot } from "@gw/config";
import { AuthGuardEnv, DoorEnv, RateLimitEnv } from "@gw/ingress";
import { JobTimingEnv } from "@gw/jobs";
import { ResearchEnv } from "@gw/tools";
import { UsageRetentionEnv } from "@gw/usage";
import { ConsoleSharedEnv } from "@gw/console";
import { TracingEnvSchema } from "@gw/telemetry";

/**
 * The embedded default's environment: everything optional. Without DATABASE_URL, REDIS_URL and
 * NATS_URL it runs on PGlite, in-memory state and the in-process bus.
 */
const EmbeddedEnv = RateLimitEnv.extend(AuthGuardEnv.shape)
  .extend(DoorEnv.shape)
  .extend(JobTimingEnv.shape)
  .extend(ResearchEnv.shape)
  .extend(UsageRetentionEnv.shape)
  .extend(TracingEnvSchema.shape)
  .extend(ConsoleSharedEnv.shape)
  .extend({
    PORT: port(8080),
    ADMIN_PORT: port(8090),
    HOST: z.string().default("127.0.0.1"),
    GATEWAY_ADMIN_TOKEN: z.string().min(16).optional(),
    GATEWAY_INTERNAL_SECRET: z.string().min(16).optional(),
    GATEWAY_MASTER_KEY: z.string().min(32, "must be at least 32 characters").optional(),
    GATEWAY_CONFIG: z.string().min(1).default(defaultConfigPath()),
    GATEWAY_DATA_DIR: z.string().min(1).default(join(repoRoot(), ".data")),
    DATABASE_URL: optionalUrl(/^postgres(ql)?$/),
    NATS_URL: z.string().optional(),
    /** With NATS_URL: path of a NATS credentials file (a .creds file or an NKey user seed). */
    NATS_CREDS: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(1).optional()),
    NATS_NAMESPACE: z
      .string()
      .regex(/^[a-z0-9]+$/)
      .default("gw"),
    GATEWAY_BODY_LIMIT_MB: z.coerce.number().positive().max(512).default(32),
    LOG_LEVEL: logLevel,
  });
export type EmbeddedEnv = z.infer<typeof EmbeddedEnv>;

export function loadEmbeddedEnv(env: Record<string, string | undefined>): EmbeddedEnv {
  return parseEnv(EmbeddedEnv, env);
}
