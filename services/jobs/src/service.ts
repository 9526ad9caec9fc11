import { fileURLToPath } from "node:url";
import type { Bus, Consumer } from "@gw/bus";
import type { GatewayConfig } from "@gw/config";
import { runMigrations, type Db } from "@gw/db";
import {
  finishedJobStatuses,
  jobStatuses,
  MAX_SETTLEMENT_BATCH,
  MAX_USAGE_BATCH,
  settlementBatchId,
  type TokenSettlement,
  type UsageRecord,
} from "@gw/contracts";
import type { Logger } from "@gw/logger";
import { Catalog, createInternalHttp, UploadGate, usageRecordsKind } from "@gw/service-kit";
import { withConsumerSpan } from "@gw/telemetry";
import { admissionClient } from "./admission-client";
import { BatchRunner } from "./batch-runner";
import { mountBatchRoutes } from "./batch-routes";
import { BatchStore } from "./batch-store";
import { Dispatcher, type JobTimings } from "./dispatcher";
import { FileStore } from "./file-store";
import { GroupCommit } from "./group-commit";
import { JobCredentials } from "./job-credentials";
import { JobStore } from "./job-store";
import { endOf, jobBodies, jobUsageRecord } from "./job-usage";
import { FinishWaiters } from "./finish-waiters";
import { mountJobRoutes } from "./routes";

export interface JobsSettings {
  host: string;
  port: number;
  internalSecret: string;
  bodyLimitBytes: number;
  timings: JobTimings;
  /**
   * GATEWAY_MASTER_KEY: keeps enterprise workspaces' own provider credentials sealed at rest while
   * their jobs can run. Unset: a job that comes with such credentials is refused (503).
   */
  masterKey?: string;
  /** Configured provider keys this process can read: redacted from detailed logs wherever they appear. */
  redact?: readonly string[];
  /** Ingress's admin port, which admits batches' lines under their keys' limits and budgets. */
  ingressAdminUrl: () => string;
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
  /** Answers every poll waiting for its job (`Prefer: wait`) now; `stop` does it first too. */
  releasePolls(): void;
  /** Polls held here now, waiting for their jobs. */
  heldPolls(): number;
  /** Bytes of large bodies being stored or read back here now (the upload gate). */
  heldUploadBytes(): number;
  stop(): Promise<void>;
}

// Two levels up is services/ both from src/ and from any service's dist/ (embedded's bundle holds
// this module too), so the sources and every bundle find the same folder (see scripts/build.ts).
export const jobsMigrations = fileURLToPath(new URL("../../jobs/migrations", import.meta.url));

/** Events applied at once; each is one UPDATE, so this bounds the jobs service's share of the pool. */
const EVENT_CONCURRENCY = 8;
/**
 * How soon the events a jobs process held when it died are handed to another (or to it, restarted):
 * applying one takes milliseconds, and the bus reports a slow one as still worked on.
 */
const EVENT_ACK_WAIT_MS = 5_000;
/**
 * An event (or a credential change) whose handler fails, Postgres being down or failing over, is
 * tried again every 5 s for over an hour before it is given up. With 20 deliveries a second apart,
 * Postgres refusing connections for 20 s dropped the job events that arrived meanwhile.
 */
const RETRY_THROUGH_OUTAGES = { maxDeliver: 1_000, retryDelayMs: 5_000 };
/** A group of settlements is published up to this many times, this far apart: well within the stream's duplicate window (an hour). */
const SETTLEMENT_ATTEMPTS = 3;
const SETTLEMENT_RETRY_MS = 500;
/** The largest result a worker may hand over out of band: ten times a 25 MB upload's transcript, or a long speech file. */
const JOB_RESULT_LIMIT_BYTES = 256 * 1024 * 1024;
/** OpenAI's limit on a batch input file (the operator's body limit applies first). */
const FILE_LIMIT_BYTES = 200 * 1024 * 1024;

/**
 * The jobs service: job and research state in the `jobs` schema. It writes a job, then publishes its
 * work for inference or tools; it applies the workers' events; its sweep republishes, retries, fails
 * and removes jobs as their deadlines and retention say.
 */
export function createJobsService(deps: JobsDeps): JobsService {
  const { settings, logger } = deps;
  const store = new JobStore(deps.db, settings.timings.attemptTimeoutMs, settings.timings.retentionMs);
  // Finished jobs' usage records, one message for those that finish together (each event is acked
  // only once its record is on the bus; the ledger keeps one record per request id).
  const usageRecords = new GroupCommit<UsageRecord, void>(
    async (records) => {
      await usageRecordsKind.send(deps.bus, records);
      return records.map(() => undefined);
    },
    { maxItems: MAX_USAGE_BATCH },
  );
  // And their token settlements, one message for those that finish together, for ingress. A group
  // whose publish failed is sent again whole, under the same message id (the stream drops it if the
  // first was kept and only its ack lost), never one by one under other ids: a settlement counted
  // twice would free a reservation twice. If it still fails, its events are redelivered and settle
  // nothing again, as before groups: the reservations then run out on their own.
  const settlements = new GroupCommit<TokenSettlement, void>(
    async (group) => {
      const message = group.length === 1 ? group[0]! : { settlements: group };
      const msgId = settlementBatchId(group);
      for (let attempt = 1; ; attempt++) {
        try {
          await deps.bus.enqueue("limits.settle", message, { msgId });
          return group.map(() => undefined);
        } catch (err) {
          if (attempt >= SETTLEMENT_ATTEMPTS) throw err;
          await new Promise((resolve) => setTimeout(resolve, SETTLEMENT_RETRY_MS));
        }
      }
    },
    { maxItems: MAX_SETTLEMENT_BATCH, retryAlone: false },
  );
  const credentials = new JobCredentials(settings.masterKey, settings.internalSecret);
  const waiters = new FinishWaiters(deps.bus, logger);
  // One body as large as the limit allows at a time, or several smaller ones.
  const uploads = new UploadGate(settings.bodyLimitBytes);
  const dispatcher = new Dispatcher(store, deps.bus, settings.timings, logger, credentials, (id) => waiters.announce(id));
  const catalog = new Catalog(deps.gateway);
  const files = new FileStore(deps.db);
  const batches = new BatchStore(deps.db);
  const runner = new BatchRunner({
    batches,
    files,
    jobs: store,
    dispatcher,
    catalog,
    credentials,
    admit: admissionClient(settings.ingressAdminUrl, settings.internalSecret),
    bus: deps.bus,
    logger,
  });
  let events: Consumer | undefined;
  let credentialChanges: Consumer | undefined;
  const http = createInternalHttp({
    name: "jobs",
    logger,
    host: settings.host,
    port: settings.port,
    internalSecret: settings.internalSecret,
    checks: { postgres: () => deps.db.ping(), nats: () => deps.bus.ping() },
    mount(app) {
      mountJobRoutes(app, {
        store,
        credentials,
        dispatcher,
        waiters,
        uploads,
        catalog,
        bus: deps.bus,
        bodyLimit: `${settings.bodyLimitBytes}b`,
        maxMessageBytes: () => deps.bus.maxPayloadBytes,
        resultLimitBytes: JOB_RESULT_LIMIT_BYTES,
      });
      mountBatchRoutes(app, { files, batches, fileLimitBytes: Math.min(FILE_LIMIT_BYTES, settings.bodyLimitBytes), kick: () => runner.kick(), uploads });
    },
  });
  return {
    async start() {
      await runMigrations(deps.db, { schema: "jobs", dir: jobsMigrations, logger });
      await sealTransitCredentials(store, credentials, logger);
      if (!deps.bus.durable) {
        const requeued = await store.markAllUndispatched();
        if (requeued > 0) logger.info({ jobs: requeued }, "jobs: unfinished jobs of the previous run published again (the bus kept nothing)");
      }
      events = await deps.bus.consume(
        "jobs.events",
        { durable: "jobs", concurrency: EVENT_CONCURRENCY, ackWaitMs: EVENT_ACK_WAIT_MS, ...RETRY_THROUGH_OUTAGES },
        (event, meta) =>
          withConsumerSpan({ bus: deps.bus, subject: "jobs.events", group: "jobs", meta }, async () => {
            const { changed, ticket, finished } = await store.apply(event);
            if (finished) waiters.announce(event.job_id);
            logger.debug({ job: event.job_id, status: event.status, attempt: event.attempt, changed }, "jobs: event applied");
            // The job's usage record goes out before the event is acked: a crash in between redelivers
            // the event, which publishes the record again (the ledger keeps one per request id).
            const ended = finished ?? (finishedJobStatuses.includes(event.status) ? await store.finishedJob(event.job_id) : undefined);
            const record = ended && jobUsageRecord(event.job_id, ended, endOf(event));
            if (record) await usageRecords.run(record);
            // Its bodies, when its workspace keeps detailed logs (ingress left them to jobs).
            const bodies = ended && jobBodies(ended, event, deps.settings.redact);
            if (bodies) await deps.bus.enqueue("usage.bodies", { bodies: [bodies] }, { msgId: `${bodies.request_id}:bodies` });
            // The job's token reservation is settled against its real usage (nothing, if it failed).
            const used = event.usage_tokens ?? (event.status === jobStatuses.failed ? 0 : undefined);
            if (ticket && used !== undefined) {
              // With what it used, for the ticket's budget hold (priced by ingress).
              await settlements.run({ job_id: event.job_id, ticket, used, ...(event.outcome ? { outcome: event.outcome } : {}) });
            }
          }),
      );
      // A workspace's credential put or deleted through ingress's admin API: its unfinished jobs take
      // the change, so every later attempt runs with the current credentials (none, once deleted).
      credentialChanges = await deps.bus.consume("credentials.changed", { durable: "jobs", ...RETRY_THROUGH_OUTAGES }, async (change) => {
        const jobs = await store.applyCredentialChange(change);
        logger.info(
          { workspace: change.workspace_id, provider: change.provider, removed: !change.sealed, jobs },
          "jobs: a workspace's provider credential changed",
        );
      });
      dispatcher.start();
      runner.start();
      return { url: (await http.start()).url };
    },
    releasePolls: () => waiters.stop(),
    heldPolls: () => waiters.size,
    heldUploadBytes: () => uploads.heldBytes,
    async stop() {
      waiters.stop();
      await http.stop();
      await runner.stop();
      await dispatcher.stop();
      await events?.stop();
      await credentialChanges?.stop();
    },
  };
}

/**
 * Unfinished jobs from before migration 0004 hold the header they arrived with, sealed under the
 * internal secret: with a master key they are sealed at rest instead, like every new job's.
 */
async function sealTransitCredentials(store: JobStore, credentials: JobCredentials, logger: Logger): Promise<void> {
  if (!credentials.canKeep) return;
  let converted = 0;
  const skipped = new Set<string>();
  for (;;) {
    const rows = (await store.withTransitCredentials(100 + skipped.size)).filter((row) => !skipped.has(row.id));
    if (rows.length === 0) break;
    for (const row of rows) {
      const sealed = credentials.fromTransit(row.workspace_id, row.transit_credentials);
      if (sealed && (await store.convertTransit(row.id, row.transit_credentials, sealed))) converted++;
      else skipped.add(row.id);
    }
  }
  if (converted > 0) logger.info({ jobs: converted }, "jobs: credentials of unfinished jobs sealed at rest");
  if (skipped.size > 0) logger.warn({ jobs: skipped.size }, "jobs: unfinished jobs keep credentials sealed for transit (they do not open here)");
}
