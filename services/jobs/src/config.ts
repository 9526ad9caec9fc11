import { z } from "zod";
import { logLevel, parseEnv, port, secret } from "@gw/config";

const JobsEnv = z.object({
  JOBS_PORT: port(8083),
  HOST: z.string().default("0.0.0.0"),
  GATEWAY_INTERNAL_SECRET: secret,
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }),
  NATS_URL: z.string().min(1),
  NATS_NAMESPACE: z.string().regex(/^[a-z0-9]+$/).default("gw"),
  LOG_LEVEL: logLevel,
});
export type JobsEnv = z.infer<typeof JobsEnv>;

export function loadJobsEnv(env: Record<string, string | undefined>): JobsEnv {
  return parseEnv(JobsEnv, env);
}
