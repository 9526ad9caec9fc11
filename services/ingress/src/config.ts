import { z } from "zod";
import { logLevel, optionalUrl, parseEnv, port, secret } from "@gw/config";

/** The ingress process's environment (operator-interface.md). main.ts is the only caller. */
const IngressEnv = z.object({
  PORT: port(8080),
  ADMIN_PORT: port(8090),
  HOST: z.string().default("0.0.0.0"),
  GATEWAY_ADMIN_TOKEN: secret,
  GATEWAY_INTERNAL_SECRET: secret,
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }),
  NATS_URL: z.string().min(1),
  NATS_NAMESPACE: z.string().regex(/^[a-z0-9]+$/).default("gw"),
  REDIS_URL: optionalUrl(/^rediss?$/),
  INFERENCE_URL: z.url().default("http://127.0.0.1:8081"),
  TOOLS_URL: z.url().default("http://127.0.0.1:8082"),
  JOBS_URL: z.url().default("http://127.0.0.1:8083"),
  GATEWAY_BODY_LIMIT_MB: z.coerce.number().positive().max(512).default(32),
  GATEWAY_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(300_000).default(10_000),
  LOG_LEVEL: logLevel,
});
export type IngressEnv = z.infer<typeof IngressEnv>;

export function loadIngressEnv(env: Record<string, string | undefined>): IngressEnv {
  return parseEnv(IngressEnv, env);
}
