import { fileURLToPath } from "node:url";
import type { Bus, Consumer } from "@gw/bus";
import { buildInfo, type GatewayConfig, type PlanLimitsTable } from "@gw/config";
import { settlementsOf } from "@gw/contracts";
import { runMigrations, type Db } from "@gw/db";
import type { Logger } from "@gw/logger";
import { createPricer } from "@gw/pricing";
import { createMetrics, Health, Sealer, startHttpServer, UsagePublisher, type RunningServer, type ServiceMetrics } from "@gw/service-kit";
import { createAdminApp } from "./admin/admin-app";
import { CredentialRelay } from "./credentials/credential-relay";
import { CredentialStore } from "./credentials/credential-store";
import { BodyBudget } from "./body/body-budget";
import { BudgetGate, jobHold } from "./budgets/budget-gate";
import { BodyCapture } from "./logs/body-capture";
import { MemoryBudgetStore } from "./budgets/memory-budget-store";
import { type MonthToDate, monthToDateFromLedger } from "./budgets/month-to-date";
import { RedisBudgetStore } from "./budgets/redis-budget-store";
import { Authenticator, defaultAuthenticatorLimits, type AuthenticatorLimits } from "./auth/authenticator";
import type { BackendUrls } from "./proxy/forward";
import { LeasingLimiter } from "./limits/leasing-limiter";
import { MemoryLimiter } from "./limits/memory-limiter";
import { RateLimitGate, type FailureMode } from "./limits/rate-limit-gate";
import { RedisLimiter } from "./limits/redis-limiter";
import type { Limiter } from "./limits/types";
import { createPublicApp } from "./public-app";
import { AuditStore } from "./store/audit-store";
import { IdentityStore } from "./store/identity-store";

export interface IngressSettings {
  host: string;
  port: number;
  adminPort: number;
  adminToken: string;
  internalSecret: string;
  backends: BackendUrls;
  bodyLimitBytes: number;
  keyCacheTtlMs: number;
  /** Default limits per plan, from the config file. */
  plans: PlanLimitsTable;
  rateLimits: RateLimitSettings;
  /** What unknown keys may cost; unset: the defaults of AuthGuardEnv. */
  authGuard?: AuthGuardSettings;
  /** How the public port reads bodies and finds the client's address; unset: the defaults of DoorEnv. */
  door?: DoorSettings;
  /** Seals enterprise workspaces' provider credentials at rest; unset: they cannot be registered. */
  masterKey?: string;
  /** Provider names of the configuration file, for credential registration. */
  providers?: readonly string[];
  /** The usage service, which answers the admin API's usage, logs and statement queries. */
  usageUrl?: string;
  /** The console service: `/console/*` on the public port, and `POST /admin/users`. */
  consoleUrl?: string;
  /** Configured provider keys this process can read: redacted from detailed logs wherever they appear. */
  redact?: readonly string[];
  /** The configuration's models and prices, which budgets price requests with; unset, budgets are not enforced. */
  gateway?: GatewayConfig;
}

export interface RateLimitSettings {
  /** Shared limits for every replica; unset: in-memory limits for this process only. */
  redisUrl: string | undefined;
  prefix: string;
  windowMs: number;
  failureMode: FailureMode;
  timeoutMs: number;
}

export interface DoorSettings {
  /** Bytes of request bodies this process holds at once. */
  bodyInflightBytes: number;
  /** Express's `trust proxy`, for the client's address behind a load balancer. */
  trustProxy?: boolean | number | string;
}

/** Without settings: room for eight of the largest bodies at once. */
const DEFAULT_BODY_INFLIGHT_BYTES = 256 * 1024 * 1024;

export interface AuthGuardSettings {
  /** Failed authentications per client address and minute before it gets 429s; 0: no limit. */
  failuresPerMinute: number;
  trackedAddresses: number;
  /** Concurrent store lookups of uncached keys, and how many may wait for one. */
  lookupConcurrency: number;
  lookupQueue: number;
  /** Bound of the unknown-key cache, kept apart from known keys. */
  unknownKeyCacheSize: number;
}

/** Sixty buckets per window: the window slides by a sixtieth (one second per minute). */
const BUCKETS = 60;

export interface IngressDeps {
  settings: IngressSettings;
  db: Db;
  bus: Bus;
  logger: Logger;
}

export interface IngressService {
  start(): Promise<{ url: string; adminUrl: string }>;
  stop(): Promise<void>;
  readonly authenticator: Authenticator;
}

// Two levels up is services/ both from src/ and from any service's dist/ (embedded's bundle holds
// this module too), so the sources and every bundle find the same folder (see scripts/build.ts).
export const ingressMigrations = fileURLToPath(new URL("../../ingress/migrations", import.meta.url));

export function createIngressService(deps: IngressDeps): IngressService {
  const { settings, db, bus, logger } = deps;
  const metrics = createMetrics("ingress");
  const health = new Health();
  health.addCheck("postgres", () => db.ping());
  health.addCheck("nats", () => bus.ping());
  const store = new IdentityStore(db);
  const atRest = settings.masterKey ? new Sealer(settings.masterKey, "provider-credentials") : undefined;
  const relay = new CredentialRelay(atRest, settings.internalSecret, logger);
  const guard = settings.authGuard;
  const authenticator = new Authenticator(
    store,
    {
      ttlMs: settings.keyCacheTtlMs,
      negativeTtlMs: Math.min(settings.keyCacheTtlMs, 5_000),
      maxStaleMs: 10 * 60_000,
      maxEntries: 100_000,
      maxNegativeEntries: guard?.unknownKeyCacheSize ?? 10_000,
    },
    logger,
    guard ? authenticatorLimits(guard) : defaultAuthenticatorLimits,
  );
  const { limiter, redis } = createLimiter(settings.rateLimits, logger);
  const usage = new UsagePublisher({ bus, logger, metrics });
  const rateLimits = new RateLimitGate(limiter, settings.plans, settings.rateLimits.failureMode, logger, metrics);
  const budgets = settings.gateway && createBudgetGate(settings, settings.gateway, redis, bus, logger, metrics);
  const bodyCapture = new BodyCapture(bus, logger, metrics, settings.redact);
  // Failing open, Redis being down must not take ingress out of rotation; failing closed, it should.
  if (settings.rateLimits.failureMode === "closed") health.addCheck("redis", () => limiter.ping().then(() => true));
  const onIdentityChanged = (kind: "key" | "workspace", id: string) => {
    authenticator.cache.invalidate(kind, id);
  };
  let servers: RunningServer[] = [];
  let unsubscribe: (() => void) | undefined;
  let settlements: Consumer | undefined;

  return {
    authenticator,
    async start() {
      redis?.connect();
      await runMigrations(db, { schema: "ingress", dir: ingressMigrations, logger });
      unsubscribe = bus.subscribe("identity.changed", (change) => onIdentityChanged(change.kind, change.id));
      // Finished async jobs' reservations, settled by one replica as a live call's would be.
      settlements = await bus.consume("limits.settle", { durable: "ingress", concurrency: 8 }, async (message) => {
        for (const { ticket, used, outcome } of settlementsOf(message)) {
          if (ticket.tokens > 0)
            rateLimits.settle({ workspaceId: ticket.workspace_id, keyId: ticket.key_id, bucket: ticket.bucket, tokens: ticket.tokens }, used);
          // A job that ran costs what it reported; one that failed or was replayed, nothing.
          if (ticket.budget)
            budgets?.settle(jobHold(ticket.budget), ticket.workspace_id, ticket.key_id, outcome ? { kind: "answered", outcome } : { kind: "failed" });
        }
      });
      const publicApp = createPublicApp({
        logger,
        metrics,
        usage,
        health,
        authenticator,
        backends: settings.backends,
        internalSecret: settings.internalSecret,
        bodyLimitBytes: settings.bodyLimitBytes,
        bodyBudget: new BodyBudget(settings.door?.bodyInflightBytes ?? DEFAULT_BODY_INFLIGHT_BYTES),
        trustProxy: settings.door?.trustProxy,
        rateLimits,
        budgets,
        bodyCapture,
        rateWindowMs: settings.rateLimits.windowMs,
        credentials: relay,
        consoleUrl: settings.consoleUrl,
      });
      const adminApp = createAdminApp({
        logger,
        metrics,
        store,
        audit: new AuditStore(db),
        bus,
        adminToken: settings.adminToken,
        internalSecret: settings.internalSecret,
        onIdentityChanged,
        plans: settings.plans,
        // The store announces each change on the bus, for the async jobs still waiting to run.
        credentials: { store: new CredentialStore(db, bus), sealer: atRest, providers: settings.providers ?? [] },
        usage: { url: settings.usageUrl, internalSecret: settings.internalSecret, consoleUrl: settings.consoleUrl },
        budgets,
        admissions: { rateLimits, credentials: relay, rateWindowMs: settings.rateLimits.windowMs },
      });
      const pub = await startHttpServer(publicApp, settings.port, settings.host, { deferContinue: true });
      const admin = await startHttpServer(adminApp, settings.adminPort, settings.host);
      servers = [pub, admin];
      logger.info({ url: pub.url, adminUrl: admin.url, ...buildInfo() }, "ingress listening");
      return { url: pub.url, adminUrl: admin.url };
    },
    async stop() {
      health.startDraining();
      unsubscribe?.();
      await settlements?.stop();
      await Promise.all(servers.map((s) => s.close(10_000)));
      servers = [];
      // Records of the last answers go to the bus before the process lets go of it.
      await usage.flush();
      usage.stop();
      await bodyCapture.flush();
      // The last answers' budget settlements, before the Redis connection they use closes.
      await budgets?.flush();
      await limiter.close();
    },
  };
}

function authenticatorLimits(guard: AuthGuardSettings): AuthenticatorLimits {
  const defaults = defaultAuthenticatorLimits;
  return {
    lookups: { ...defaults.lookups, concurrency: guard.lookupConcurrency, maxQueue: guard.lookupQueue },
    failures: { ...defaults.failures, maxFailures: guard.failuresPerMinute, maxAddresses: guard.trackedAddresses },
  };
}

/**
 * In memory for the embedded default (one process: nothing to share, nothing to save); in Redis for
 * the mesh, taken in leases so that a busy key's requests seldom wait for a round trip to it.
 */
/** Budgets on the rate limiter's Redis connection (or in memory beside the in-memory limiter), seeded from the ledger. */
function createBudgetGate(
  settings: IngressSettings,
  gateway: GatewayConfig,
  redis: RedisLimiter | undefined,
  bus: Bus,
  logger: Logger,
  metrics: ServiceMetrics,
): BudgetGate {
  const { usageUrl, internalSecret } = settings;
  return new BudgetGate({
    store: redis ? new RedisBudgetStore(redis.connection, settings.rateLimits.timeoutMs) : new MemoryBudgetStore(),
    pricer: createPricer(gateway),
    gateway,
    monthToDate: usageUrl ? monthToDateFromLedger(usageUrl, internalSecret) : noLedger(logger),
    failureMode: settings.rateLimits.failureMode,
    prefix: settings.rateLimits.prefix,
    bus,
    logger,
    metrics,
  });
}

/** Without a ledger (no USAGE_URL), a month's counter starts from zero; said once. */
function noLedger(logger: Logger): MonthToDate {
  let said = false;
  return async () => {
    if (!said) logger.warn("budgets: no usage service (USAGE_URL) to read month-to-date spend from; counters start at zero");
    said = true;
    return { workspace: 0, keys: new Map() };
  };
}

function createLimiter(settings: RateLimitSettings, logger: Logger): { limiter: Limiter; redis?: RedisLimiter } {
  const window = { windowMs: settings.windowMs, buckets: BUCKETS };
  if (!settings.redisUrl) return { limiter: new MemoryLimiter(window) };
  const redis = new RedisLimiter({ ...window, url: settings.redisUrl, prefix: settings.prefix, timeoutMs: settings.timeoutMs, logger });
  return { limiter: new LeasingLimiter(redis, { windowMs: settings.windowMs, bucketMs: settings.windowMs / BUCKETS }), redis };
}
