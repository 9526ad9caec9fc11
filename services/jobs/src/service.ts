import { fileURLToPath } from "node:url";
import type { Bus, Consumer } from "@gw/bus";
import type { GatewayConfig } from "@gw/config";
import { runMigrations, type Db } from "@gw/db";
import { jobStatuses } from "@gw/contracts";
import type { Logger } from "@gw/logger";
import { Catalog, createInternalHttp } from "@gw/service-kit";
import { Dispatcher, type JobTimings } from "./dispatcher";
import { JobStore } from "./job-store";
import { mountJobRoutes } from "./routes";

export interface JobsSettings {
  host: string;
  port: number;
  internalSecret: string;
  bodyLimitBytes: number;
  timings: JobTimings;
}

export interface JobsDeps {
  settings: JobsSettings;
  /** The model catalog, so a job is refused at creation exactly as its regular call would be. */
  gateway: GatewayConfig;
  db: Db;
  bus: Bus;
  logger: Logger;
}

export interface JobsService {
  start(): Promise<{ url: string }>;
  stop(): Promise<void>;
}

export const jobsMigrations = fileURLToPath(new URL("../migrations", import.meta.url));

/** Events applied at once; each is one UPDATE, so this bounds the jobs service's share of the pool. */
const EVENT_CONCURRENCY = 8;

/**
 * The jobs service: job and research state in the `jobs` schema. It writes a job, then publishes its
 * work for inference or tools; it applies the workers' events; its sweep republishes, retries, fails
 * and removes jobs as their deadlines and retention say.
 */
export function createJobsService(deps: JobsDeps): JobsService {
  const { settings, logger } = deps;
  const store = new JobStore(deps.db, settings.timings.attemptTimeoutMs);
  const dispatcher = new Dispatcher(store, deps.bus, settings.timings, logger);
  const catalog = new Catalog(deps.gateway);
  let events: Consumer | undefined;
  const http = createInternalHttp({
    name: "jobs",
    logger,
    host: settings.host,
    port: settings.port,
    internalSecret: settings.internalSecret,
    checks: { postgres: () => deps.db.ping(), nats: () => deps.bus.ping() },
    mount(app) {
      mountJobRoutes(app, { store, dispatcher, catalog, bus: deps.bus, bodyLimit: `${settings.bodyLimitBytes}b`, maxMessageBytes: () => deps.bus.maxPayloadBytes });
    },
  });
  return {
    async start() {
      await runMigrations(deps.db, { schema: "jobs", dir: jobsMigrations, logger });
      if (!deps.bus.durable) {
        const requeued = await store.markAllUndispatched();
        if (requeued > 0) logger.info({ jobs: requeued }, "jobs: unfinished jobs of the previous run published again (the bus kept nothing)");
      }
      events = await deps.bus.consume("jobs.events", { durable: "jobs", concurrency: EVENT_CONCURRENCY, maxDeliver: 20 }, async (event) => {
        const { changed, ticket } = await store.apply(event);
        logger.debug({ job: event.job_id, status: event.status, attempt: event.attempt, changed }, "jobs: event applied");
        // The job's token reservation is settled against its real usage (nothing, if it failed).
        const used = event.usage_tokens ?? (event.status === jobStatuses.failed ? 0 : undefined);
        if (ticket && used !== undefined) await deps.bus.enqueue("limits.settle", { job_id: event.job_id, ticket, used }, { msgId: event.job_id });
      });
      dispatcher.start();
      return { url: (await http.start()).url };
    },
    async stop() {
      await http.stop();
      await dispatcher.stop();
      await events?.stop();
    },
  };
}
