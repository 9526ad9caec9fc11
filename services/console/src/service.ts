import { fileURLToPath } from "node:url";
import express, { type RequestHandler, Router } from "express";
import type { GatewayConfig } from "@gw/config";
import { CreateUserBody, type Identity, isOperatorIdentity } from "@gw/contracts";
import { runMigrations, type Db } from "@gw/db";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { createPricer } from "@gw/pricing";
import { createInternalHttp, routeLabel } from "@gw/service-kit";
import { signedInOf } from "./access";
import { AdminClient } from "./admin-client";
import { mountAuthRoutes } from "./api/auth-routes";
import { type ConsoleContext, consoleLink } from "./api/context";
import { mountTeamRoutes } from "./api/team-routes";
import { mountWorkspaceRoutes } from "./api/workspace-routes";
import { InvitationMailer, type SmtpSettings } from "./mailer";
import { OidcSignIn, type OidcSettings } from "./oidc";
import { checkCsrf, defaultSessionSettings, type SessionSettings, Sessions } from "./sessions";
import { PeopleStore, publicUser } from "./store";
import { defaultThrottleLimits, SignInThrottle, type ThrottleLimits } from "./throttle";
import { mountWebApp } from "./web-app";

export interface ConsoleSettings {
  host: string;
  port: number;
  internalSecret: string;
  /** Ingress's admin API (INGRESS_ADMIN_URL); a function, as the embedded default knows it only once ingress has started. */
  ingressAdminUrl: string | (() => string);
  /** GATEWAY_PUBLIC_URL; a function for the embedded default, which knows its address once listening. */
  publicUrl?: string | (() => string | undefined);
  sessions?: SessionSettings;
  throttle?: ThrottleLimits;
  /** GATEWAY_OIDC_ISSUER, _CLIENT_ID, _CLIENT_SECRET; unset, people sign in with passwords only. */
  oidc?: OidcSettings;
  /** GATEWAY_SMTP_URL and _FROM: invitations go by email too. */
  smtp?: SmtpSettings;
}

export interface ConsoleDeps {
  settings: ConsoleSettings;
  db: Db;
  gateway: GatewayConfig;
  logger: Logger;
  clock?: () => number;
  /** The web app's built files (default: services/console/web/dist). */
  webDist?: string;
}

export interface ConsoleService {
  start(): Promise<{ url: string }>;
  stop(): Promise<void>;
  /**
   * A person, created if new (an operator when asked), and a single-use link to sign in with:
   * `pnpm gw user create`, and the embedded default's first operator.
   */
  createUser(email: string, options?: { operator?: boolean; name?: string }): Promise<{ user: ReturnType<typeof publicUser>; link: string }>;
  /** Whether any operator exists yet (the embedded default makes the first one). */
  hasOperator(): Promise<boolean>;
}

// Two levels up is services/ both from src/ and from any service's dist/ (see scripts/build.ts).
export const consoleMigrations = fileURLToPath(new URL("../../console/migrations", import.meta.url));
export const consoleWebDist = fileURLToPath(new URL("../../console/web/dist", import.meta.url));

const HOUR = 3_600_000;

/**
 * The console: people (users, sessions, memberships, invitations, sign-in) in the `console` schema,
 * the web app, and its JSON API under /console/api, which checks the role matrix on every call and
 * reaches workspaces, keys and the ledger through ingress's admin API as the person.
 */
export function createConsoleService(deps: ConsoleDeps): ConsoleService {
  const { settings, logger } = deps;
  const clock = deps.clock ?? Date.now;
  const store = PeopleStore.over(deps.db);
  const adminUrl = settings.ingressAdminUrl;
  const ctx: ConsoleContext = {
    store,
    sessions: new Sessions(store, settings.sessions ?? defaultSessionSettings, clock),
    admin: new AdminClient(typeof adminUrl === "string" ? () => adminUrl : adminUrl, settings.internalSecret),
    throttle: new SignInThrottle(store, clock, settings.throttle ?? defaultThrottleLimits),
    gateway: deps.gateway,
    pricer: createPricer(deps.gateway),
    logger,
    clock,
    oidc: settings.oidc ? new OidcSignIn(settings.oidc, logger) : undefined,
    mailer: settings.smtp ? new InvitationMailer(settings.smtp, logger) : undefined,
    publicUrl: typeof settings.publicUrl === "function" ? settings.publicUrl : () => settings.publicUrl as string | undefined,
    linkTtlMs: { invitation: 7 * 24 * HOUR, signIn: 24 * HOUR },
  };
  let sweeper: NodeJS.Timeout | undefined;

  const signedIn: RequestHandler = async (req, res, next) => {
    const found = await ctx.sessions.read(req);
    if (!found) throw new GatewayError("not_signed_in", "Sign in to continue");
    res.locals.signedIn = found;
    if (req.method !== "GET" && req.method !== "HEAD") checkCsrf(req, found.session);
    next();
  };

  const createUser: ConsoleService["createUser"] = async (email, options = {}) => {
    const user = await store.ensureUser(email, options);
    const { token } = await store.createLink({ email: user.email, userId: user.id, expiresAt: clock() + ctx.linkTtlMs.signIn });
    await store.audit({ actor: "admin-token", action: "person.create", targetKind: "person", targetId: user.id, detail: { operator: user.operator } });
    return { user: publicUser(user), link: consoleLink(ctx, undefined, "sign-in", token) };
  };

  const http = createInternalHttp({
    name: "console",
    logger,
    host: settings.host,
    port: settings.port,
    internalSecret: settings.internalSecret,
    checks: { postgres: () => deps.db.ping() },
    mount(app) {
      // The CLI's `gw user create`, through ingress's admin API (signed as the operator).
      app.post("/v1/users", routeLabel("/v1/users"), express.json({ limit: "16kb" }), async (req, res) => {
        if (!isOperatorIdentity(res.locals.identity as Identity)) throw new GatewayError("forbidden", "Only the operator creates people");
        const body = CreateUserBody.parse(req.body ?? {});
        res.status(201).json(await createUser(body.email, { operator: body.operator, name: body.name }));
      });
      const api = Router();
      api.use(express.json({ limit: "256kb" }));
      mountAuthRoutes(api, ctx, signedIn);
      api.use(signedIn);
      mountWorkspaceRoutes(api, ctx);
      mountTeamRoutes(api, ctx);
      app.use(
        "/console/api",
        (_req, res, next) => {
          res.setHeader("cache-control", "no-store");
          res.locals.route = "/console/api";
          next();
        },
        api,
      );
      mountWebApp(app, deps.webDist ?? consoleWebDist);
    },
  });

  return {
    createUser,
    hasOperator: () => store.hasOperator(),
    async start() {
      await runMigrations(deps.db, { schema: "console", dir: consoleMigrations, logger });
      sweeper = setInterval(() => {
        const sessions = settings.sessions ?? defaultSessionSettings;
        store.sweep(clock(), sessions.idleMs, ctx.throttle.windowMs).catch((err: unknown) => logger.warn({ err }, "console: sweeping sessions failed"));
      }, HOUR);
      sweeper.unref();
      return { url: (await http.start()).url };
    },
    async stop() {
      clearInterval(sweeper);
      await http.stop();
      ctx.mailer?.close();
    },
  };
}

export { signedInOf };
