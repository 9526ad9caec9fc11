import { z } from "zod";
import { defaultConfigPath, logLevel, optionalUrl, parseEnv, port, secret } from "@gw/config";

/** What the console process and the embedded default both read: links, single sign-on, email. */
export const ConsoleSharedEnv = z.object({
  GATEWAY_OIDC_ISSUER: optionalUrl(/^https?$/),
  GATEWAY_OIDC_CLIENT_ID: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(1).optional()),
  GATEWAY_OIDC_CLIENT_SECRET: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(1).optional()),
  /**
   * The gateway's address as people reach it (`https://gateway.example.com`): links the console
   * hands out (invitations, first sign-in) start with it. Unset, a link made in the browser uses the
   * address the browser used, and one made by the CLI is printed as a path.
   */
  GATEWAY_PUBLIC_URL: optionalUrl(/^https?$/),
  /** Invitations also go by email when set: `smtp://user:password@host:587` or `smtps://…`. */
  GATEWAY_SMTP_URL: optionalUrl(/^smtps?$/),
  GATEWAY_SMTP_FROM: z.string().min(3).default("AI gateway <gateway@localhost>"),
});
export type ConsoleSharedEnv = z.infer<typeof ConsoleSharedEnv>;

export function smtpSettings(env: ConsoleSharedEnv): { url: string; from: string } | undefined {
  return env.GATEWAY_SMTP_URL === undefined ? undefined : { url: env.GATEWAY_SMTP_URL, from: env.GATEWAY_SMTP_FROM };
}

/** The three GATEWAY_OIDC_* values as settings: all set, or none (a partial set stops the process at start). */
export function oidcSettings(env: ConsoleSharedEnv): { issuer: string; clientId: string; clientSecret: string } | undefined {
  const { GATEWAY_OIDC_ISSUER: issuer, GATEWAY_OIDC_CLIENT_ID: clientId, GATEWAY_OIDC_CLIENT_SECRET: clientSecret } = env;
  if (issuer === undefined && clientId === undefined && clientSecret === undefined) return undefined;
  if (issuer === undefined || clientId === undefined || clientSecret === undefined) {
    throw new Error("GATEWAY_OIDC_ISSUER, GATEWAY_OIDC_CLIENT_ID and GATEWAY_OIDC_CLIENT_SECRET: set all three for single sign-on, or none");
  }
  return { issuer, clientId, clientSecret };
}

const ConsoleEnv = ConsoleSharedEnv.extend({
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
