import { z } from "zod";
import { defaultConfigPath, logLevel, optionalUrl, parseEnv, port, secret } from "@gw/config";

/** Single sign-on, shared by the console process and the embedded default; all three or none. */
export const OidcEnv = z.object({
  GATEWAY_OIDC_ISSUER: optionalUrl(/^https?$/),
  GATEWAY_OIDC_CLIENT_ID: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(1).optional()),
  GATEWAY_OIDC_CLIENT_SECRET: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(1).optional()),
  /**
   * The gateway's address as people reach it (`https://gateway.example.com`): links the console
   * hands out (invitations, first sign-in) start with it. Unset, a link made in the browser uses the
   * address the browser used, and one made by the CLI is printed as a path.
   */
  GATEWAY_PUBLIC_URL: optionalUrl(/^https?$/),
});
export type OidcEnv = z.infer<typeof OidcEnv>;

/** The three GATEWAY_OIDC_* values as settings: all set, or none (a partial set stops the process at start). */
export function oidcSettings(env: OidcEnv): { issuer: string; clientId: string; clientSecret: string } | undefined {
  const { GATEWAY_OIDC_ISSUER: issuer, GATEWAY_OIDC_CLIENT_ID: clientId, GATEWAY_OIDC_CLIENT_SECRET: clientSecret } = env;
  if (issuer === undefined && clientId === undefined && clientSecret === undefined) return undefined;
  if (issuer === undefined || clientId === undefined || clientSecret === undefined) {
    throw new Error("GATEWAY_OIDC_ISSUER, GATEWAY_OIDC_CLIENT_ID and GATEWAY_OIDC_CLIENT_SECRET: set all three for single sign-on, or none");
  }
  return { issuer, clientId, clientSecret };
}

const ConsoleEnv = OidcEnv.extend({
  CONSOLE_PORT: port(8085),
  HOST: z.string().default("0.0.0.0"),
  GATEWAY_INTERNAL_SECRET: secret,
  GATEWAY_CONFIG: z.string().min(1).default(defaultConfigPath()),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }),
  /** Ingress's admin port, through which the console reaches workspaces, keys and usage. */
  INGRESS_ADMIN_URL: z.url().default("http://127.0.0.1:8090"),
  LOG_LEVEL: logLevel,
});
export type ConsoleEnv = z.infer<typeof ConsoleEnv>;

export function loadConsoleEnv(env: Record<string, string | undefined>): ConsoleEnv {
  return parseEnv(ConsoleEnv, env);
}
