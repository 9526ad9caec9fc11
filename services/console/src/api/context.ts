import type { Request } from "express";
import { clientAddressHeader } from "@gw/contracts";
import type { GatewayConfig } from "@gw/config";
import type { Logger } from "@gw/logger";
import type { Pricer } from "@gw/pricing";
import type { AdminClient } from "../admin-client";
import type { InvitationMailer } from "../mailer";
import type { OidcSignIn } from "../oidc";
import type { Sessions } from "../sessions";
import type { PeopleStore } from "../store";
import type { SignInThrottle } from "../throttle";

/** What the console's routes share. */
export interface ConsoleContext {
  store: PeopleStore;
  sessions: Sessions;
  admin: AdminClient;
  throttle: SignInThrottle;
  gateway: GatewayConfig;
  pricer: Pricer;
  logger: Logger;
  clock: () => number;
  /** GATEWAY_PUBLIC_URL: where the links handed out point (else the address the browser used). */
  publicUrl: () => string | undefined;
  /** Invitations by email, when GATEWAY_SMTP_URL is set. */
  mailer: InvitationMailer | undefined;
  /** Single sign-on, when GATEWAY_OIDC_* are set. */
  oidc: OidcSignIn | undefined;
  /** How long a single-use link stays good. */
  linkTtlMs: { invitation: number; signIn: number };
}

/** The caller's address as ingress saw it (client-sent `x-gw-*` headers never get this far). */
export function clientAddress(req: Request): string {
  const given = req.headers[clientAddressHeader];
  return (Array.isArray(given) ? given[0] : given) ?? req.socket.remoteAddress ?? "unknown";
}

/** A link into the console: absolute on the public URL, or the browser's own address, or a path. */
export function consoleLink(ctx: ConsoleContext, req: Request | undefined, page: string, token: string): string {
  return `${gatewayOrigin(ctx, req) ?? ""}/console/${page}#token=${token}`;
}

/** The gateway's address as people reach it: GATEWAY_PUBLIC_URL, else the one the browser used. */
export function gatewayOrigin(ctx: ConsoleContext, req: Request | undefined): string | undefined {
  const base = ctx.publicUrl();
  if (base) return base.replace(/\/+$/, "");
  const host = req && (req.headers["x-forwarded-host"] ?? req.headers.host);
  if (!req || !host) return undefined;
  const proto = String(req.headers["x-forwarded-proto"] ?? "http")
    .split(",")[0]
    ?.trim();
  return `${proto === "https" ? "https" : "http"}://${String(host)}`;
}
