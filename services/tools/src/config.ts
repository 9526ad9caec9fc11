import { z } from "zod";
import { defaultConfigPath, logLevel, parseEnv, port, secret } from "@gw/config";

const ToolsEnv = z.object({
  TOOLS_PORT: port(8082),
  HOST: z.string().default("0.0.0.0"),
  GATEWAY_INTERNAL_SECRET: secret,
  GATEWAY_CONFIG: z.string().min(1).default(defaultConfigPath()),
  NATS_URL: z.string().min(1),
  NATS_NAMESPACE: z.string().regex(/^[a-z0-9]+$/).default("gw"),
  LOG_LEVEL: logLevel,
});
export type ToolsEnv = z.infer<typeof ToolsEnv>;

export function loadToolsEnv(env: Record<string, string | undefined>): ToolsEnv {
  return parseEnv(ToolsEnv, env);
}
