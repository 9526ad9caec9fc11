import { z } from "zod";
import { defaultConfigPath, logLevel, optionalUrl, parseEnv, port, secret } from "@gw/config";
import type { AuthGuardSettings, DoorSettings, RateLimitSettings } from "./service";

/** How rate limits are kept; shared with the embedded launcher's environment. */
export const RateLimitEnv = z.object({
  REDIS_URL: optionalUrl(/^rediss?$/),
  /** Prepended to every Redis key, so several gateways (or test runs) can share one Redis. */
  GATEWAY_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_.-]*$/, "letters, digits and : _ . - only")
    .default("gw:"),
  /** Limits are per minute; a shorter window is for tests and demos (limits then apply per window). */
  GATEWAY_RATE_LIMIT_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(600)
    .max(3_600_000)
    .refine((v) => v % 60 === 0, "must be a multiple of 60 (the window has 60 buckets)")
    .default(60_000),
  /** What happens while Redis is unreachable: serve without limits (open) or answer 503 (closed). */
  GATEWAY_RATE_LIMIT_FAILURE_MODE: z.enum(["open", "closed"]).default("open"),
  /** A limiter call slower than this counts as Redis being unreachable. */
  GATEWAY_RATE_LIMIT_TIMEOUT_MS: z.coerce.number().int().min(1).max(10_000).default(500),
});
export type RateLimitEnv = z.infer<typeof RateLimitEnv>;

export function rateLimitSettings(env: RateLimitEnv): RateLimitSettings {
  return {
    redisUrl: env.REDIS_URL,
    prefix: env.GATEWAY_REDIS_PREFIX,
    windowMs: env.GATEWAY_RATE_LIMIT_WINDOW_MS,
    failureMode: env.GATEWAY_RATE_LIMIT_FAILURE_MODE,
    timeoutMs: env.GATEWAY_RATE_LIMIT_TIMEOUT_MS,
  };
}

/** What unknown keys may cost; shared with the embedded launcher's environment. */
export const AuthGuardEnv = z.object({
  /** How long a replica trusts a cached key without asking Postgres (changes are also broadcast at once). */
  GATEWAY_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(300_000).default(10_000),
  /** Failed authentications (missing, malformed, unknown or revoked key) one client address may make per minute; 0: no limit. */
  GATEWAY_AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(0).max(1_000_000).default(60),
  /** Client addresses whose failures are counted at once (IPv6 by /64); the least recent go first. */
  GATEWAY_AUTH_TRACKED_ADDRESSES: z.coerce.number().int().min(1).max(10_000_000).default(50_000),
  /** Store lookups of uncached keys running at once per process (the Postgres pool holds 10). */
  GATEWAY_AUTH_LOOKUP_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(4),
  /** Lookups waiting for a turn; past it, or after waiting 2 s, the caller gets a retryable 503. */
  GATEWAY_AUTH_LOOKUP_QUEUE: z.coerce.number().int().min(0).max(100_000).default(256),
  /** Unknown keys remembered for a few seconds, apart from known ones (which they never evict). */
  GATEWAY_AUTH_UNKNOWN_KEY_CACHE_SIZE: z.coerce.number().int().min(1).max(10_000_000).default(10_000),
});
export type AuthGuardEnv = z.infer<typeof AuthGuardEnv>;

export function authGuardSettings(env: AuthGuardEnv): AuthGuardSettings {
  return {
    failuresPerMinute: env.GATEWAY_AUTH_FAILURES_PER_MINUTE,
    trackedAddresses: env.GATEWAY_AUTH_TRACKED_ADDRESSES,
    lookupConcurrency: env.GATEWAY_AUTH_LOOKUP_CONCURRENCY,
    lookupQueue: env.GATEWAY_AUTH_LOOKUP_QUEUE,
    unknownKeyCacheSize: env.GATEWAY_AUTH_UNKNOWN_KEY_CACHE_SIZE,
  };
}

/** How the public port reads request bodies and who the client is; shared with the embedded launcher. */
export const DoorEnv = z.object({
  /** Bytes of request bodies one process holds at once (declared sizes, or the route's limit when unknown). */
  GATEWAY_BODY_INFLIGHT_MB: z.coerce.number().positive().max(16_384).default(256),
  /**
   * Which proxies' X-Forwarded-For to believe for the client's address (express's `trust proxy`):
   * unset or "false" trusts none, a number that many hops, else a list of addresses or subnets.
   */
  GATEWAY_TRUST_PROXY: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" || v === "false" ? undefined : v === "true" ? true : /^\d+$/.test(v) ? Number(v) : v)),
});
export type DoorEnv = z.infer<typeof DoorEnv>;

export function doorSettings(env: DoorEnv): DoorSettings {
  return { bodyInflightBytes: Math.floor(env.GATEWAY_BODY_INFLIGHT_MB * 1024 * 1024), trustProxy: env.GATEWAY_TRUST_PROXY };
}

/** The ingress process's environment (docs/configuration.md). main.ts is the only caller. */
const IngressEnv = RateLimitEnv.extend(AuthGuardEnv.shape)
  .extend(DoorEnv.shape)
  .extend({
    PORT: port(8080),
    ADMIN_PORT: port(8090),
    HOST: z.string().default("0.0.0.0"),
    GATEWAY_ADMIN_TOKEN: secret,
    GATEWAY_INTERNAL_SECRET: secret,
    /** Seals enterprise workspaces' own provider credentials at rest; unset: they cannot be registered. */
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
    INFERENCE_URL: z.url().default("http://127.0.0.1:8081"),
    TOOLS_URL: z.url().default("http://127.0.0.1:8082"),
    JOBS_URL: z.url().default("http://127.0.0.1:8083"),
    USAGE_URL: z.url().default("http://127.0.0.1:8084"),
    CONSOLE_URL: z.url().default("http://127.0.0.1:8085"),
    GATEWAY_BODY_LIMIT_MB: z.coerce.number().positive().max(512).default(32),
    LOG_LEVEL: logLevel,
  });
export type IngressEnv = z.infer<typeof IngressEnv>;

export function loadIngressEnv(env: Record<string, string | undefined>): IngressEnv {
  return parseEnv(IngressEnv, env);
}
