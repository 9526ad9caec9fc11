import { randomBytes } from "node:crypto";
import { createInProcessBus, createNatsBus, readNatsCredentials, type Bus } from "@gw/bus";
import type { GatewayConfig } from "@gw/config";
import { createPgDb, type Db } from "@gw/db";
import type { Logger } from "@gw/logger";
import { createInferenceService } from "@gw/inference";
import { authGuardSettings, createIngressService, doorSettings, rateLimitSettings } from "@gw/ingress";
import { createJobsService, jobTimings } from "@gw/jobs";
import { createToolsService, researchPolling } from "@gw/tools";
import { createUsageService } from "@gw/usage";
import { createConsoleService, oidcSettings, smtpSettings } from "@gw/console";
import { startTracing } from "@gw/telemetry";
import type { EmbeddedEnv } from "./config";
import { openPgliteFolder } from "./data-folder";

export interface EmbeddedGateway {
  url: string;
  adminUrl: string;
  adminToken: string;
  /**
   * On a fresh data folder, the first operator's single-use sign-in link to the console (the
   * person \`${firstOperatorEmail}\`); undefined once any operator exists.
   */
  firstSignIn: string | undefined;
  stop(): Promise<void>;
}

/** Who the embedded default's first operator is (docs/console.md tells how to add people). */
export const firstOperatorEmail = "admin@localhost";

/**
 * All six services in one process. This launcher is the only code that imports every service
 * factory; the services still talk over loopback HTTP and the bus, exactly as in the mesh.
 */
export async function startEmbedded(
  env: EmbeddedEnv,
  gateway: GatewayConfig,
  secrets: Record<string, string | undefined>,
  logger: Logger,
): Promise<EmbeddedGateway> {
  const adminToken = env.GATEWAY_ADMIN_TOKEN ?? `gw_admin_${randomBytes(24).toString("base64url")}`;
  const internalSecret = env.GATEWAY_INTERNAL_SECRET ?? randomBytes(32).toString("base64url");
  const db = await openDb(env);
  const bus: Bus = env.NATS_URL
    ? await createNatsBus({
        url: env.NATS_URL,
        credentials: env.NATS_CREDS ? readNatsCredentials(env.NATS_CREDS) : undefined,
        // Signs its own messages and checks everyone else's, as a mesh process does.
        secret: internalSecret,
        namespace: env.NATS_NAMESPACE,
        logger,
        name: "embedded",
      })
    : createInProcessBus({ logger });
  const loopback = "127.0.0.1";
  const bodyLimitBytes = Math.floor(env.GATEWAY_BODY_LIMIT_MB * 1024 * 1024);

  let jobsUrl = "";
  // Jobs and the console reach ingress's admin port, known only once ingress listens: asked for per call.
  let adminUrl = "";
  const inference = createInferenceService({
    bus,
    gateway,
    secrets,
    logger: logger.child({ component: "inference" }),
    // Jobs listens after inference starts: its URL is asked for per call.
    settings: { host: loopback, port: 0, internalSecret, bodyLimitBytes, jobConcurrency: env.GATEWAY_JOB_CONCURRENCY, jobsUrl: () => jobsUrl },
  });
  const tools = createToolsService({
    bus,
    gateway,
    secrets,
    logger: logger.child({ component: "tools" }),
    settings: { host: loopback, port: 0, internalSecret, jobConcurrency: env.GATEWAY_JOB_CONCURRENCY, researchPolling: researchPolling(env) },
  });
  // The provider keys, redacted from detailed logs wherever a caller's text carries them.
  const redact = Object.values(secrets).filter((v): v is string => v !== undefined);
  const jobs = createJobsService({
    bus,
    db,
    gateway,
    logger: logger.child({ component: "jobs" }),
    settings: {
      host: loopback,
      port: 0,
      internalSecret,
      bodyLimitBytes,
      timings: jobTimings(env),
      masterKey: env.GATEWAY_MASTER_KEY,
      redact,
      // Ingress listens last: its admin URL is asked for per call (batches wait for it).
      ingressAdminUrl: () => adminUrl,
    },
  });
  const usage = createUsageService({
    bus,
    db,
    gateway,
    logger: logger.child({ component: "usage" }),
    settings: { host: loopback, port: 0, internalSecret, retentionDays: env.GATEWAY_USAGE_RETENTION_DAYS },
  });
  let publicUrl: string | undefined;
  const people = createConsoleService({
    db,
    gateway,
    logger: logger.child({ component: "console" }),
    settings: {
      host: loopback,
      port: 0,
      internalSecret,
      ingressAdminUrl: () => adminUrl,
      publicUrl: () => env.GATEWAY_PUBLIC_URL ?? publicUrl,
      oidc: oidcSettings(env),
      smtp: smtpSettings(env),
    },
  });
  const backends = { inference: (await inference.start()).url, tools: (await tools.start()).url, jobs: (await jobs.start()).url };
  jobsUrl = backends.jobs;
  const usageUrl = (await usage.start()).url;
  const consoleUrl = (await people.start()).url;
  const ingress = createIngressService({
    db,
    bus,
    logger: logger.child({ component: "ingress" }),
    settings: {
      host: env.HOST,
      port: env.PORT,
      adminPort: env.ADMIN_PORT,
      adminToken,
      internalSecret,
      backends,
      bodyLimitBytes,
      keyCacheTtlMs: env.GATEWAY_KEY_CACHE_TTL_MS,
      plans: gateway.plans,
      gateway,
      masterKey: env.GATEWAY_MASTER_KEY,
      providers: Object.keys(gateway.providers),
      redact,
      rateLimits: rateLimitSettings(env),
      authGuard: authGuardSettings(env),
      door: doorSettings(env),
      usageUrl,
      consoleUrl,
    },
  });
  // One tracer provider for the five services (one process, one `service.name`), registered only
  // when OTEL_EXPORTER_OTLP_ENDPOINT is set; started last so a failed start leaves none behind.
  const tracing = await startTracing({ serviceName: "gateway", env, logger });
  const { url, adminUrl: listening } = await ingress.start().catch(async (err: unknown) => {
    await tracing.shutdown();
    throw err;
  });
  adminUrl = listening;
  publicUrl = url;
  const firstSignIn = (await people.hasOperator()) ? undefined : (await people.createUser(firstOperatorEmail, { operator: true })).link;
  return {
    url,
    adminUrl,
    adminToken,
    firstSignIn,
    async stop() {
      // Held polls answer now, so that ingress's drain does not wait out their waits.
      jobs.releasePolls();
      await ingress.stop();
      await Promise.all([inference.stop(), tools.stop(), jobs.stop(), people.stop()]);
      // Last: it takes the records the others published as they stopped.
      await usage.stop();
      await bus.close();
      await db.close();
      await tracing.shutdown();
    },
  };
}

async function openDb(env: EmbeddedEnv): Promise<Db> {
  if (env.DATABASE_URL) return createPgDb({ url: env.DATABASE_URL, applicationName: "gw-embedded" });
  // Checks the folder first and explains a failure (never starts an empty database over it).
  return openPgliteFolder(env.GATEWAY_DATA_DIR);
}
