import { z } from "zod";
import { Identity } from "./identity";
import { groupMessageId } from "./message-id";
import { CallOutcome, CapturedBodiesBatch, UsageRecords } from "./usage";

/**
 * Every NATS message the mesh sends, by subject. Broadcast subjects go over core NATS (every
 * subscriber receives every message, nothing is kept); work subjects go over JetStream (durable,
 * at-least-once, one consumer group per durable name). Payloads are validated on publish and on
 * receive against these schemas, so no service defines a wire shape privately.
 */

/** Ingress replicas drop cached identities when a key or a workspace changes. */
export const IdentityChanged = z.object({
  kind: z.enum(["key", "workspace"]),
  id: z.string().min(1),
  at: z.number().int(),
});
export type IdentityChanged = z.infer<typeof IdentityChanged>;

/**
 * How a job's request travels: a JSON body as parsed JSON, a multipart form (transcriptions) as its
 * exact bytes, base64, with the content type that carries the boundary.
 */
export const JobRequest = z.discriminatedUnion("format", [
  z.object({ format: z.literal("json"), body: z.unknown() }),
  z.object({ format: z.literal("multipart"), content_type: z.string().min(1), base64: z.string() }),
]);
export type JobRequest = z.infer<typeof JobRequest>;

/**
 * A request too large for a work message stays with the jobs service, which holds it in the job's
 * row: the worker reads it from there (`GET /v1/jobs/{id}/request` on the jobs service).
 */
export const StoredJobRequest = z.object({ format: z.literal("stored"), bytes: z.number().int().min(0) });
export type StoredJobRequest = z.infer<typeof StoredJobRequest>;

/**
 * Work for an async job, published by jobs, consumed by inference (model routes) or tools
 * (research). It carries the caller's identity as ingress signed it at creation, and for an
 * enterprise workspace its sealed credentials, so the work runs with the rights and keys the
 * creating call had. `attempt` counts dispatches by the jobs service (a deadline retry is a new
 * attempt); `resume` holds what an earlier attempt learned (the upstream's own task id).
 */
export const JobWork = z.object({
  job_id: z.string().startsWith("job_"),
  route: z.string().min(1),
  identity: Identity,
  credentials: z.string().optional(),
  request: z.discriminatedUnion("format", [...JobRequest.options, StoredJobRequest]),
  attempt: z.number().int().min(1),
  request_id: z.string().optional(),
  resume: z.object({ upstream_id: z.string().min(1) }).optional(),
});
export type JobWork = z.infer<typeof JobWork>;

/**
 * Outcome of an async job, published by the worker, applied idempotently by jobs: a finished job
 * (`completed`, `failed`) never changes again, and a running status only replaces an older one.
 * `upstream_id` is the upstream's own id of the task (research), kept so a retry can resume it.
 */
export const JobEvent = z.object({
  job_id: z.string().startsWith("job_"),
  status: z.string().min(1),
  attempt: z.number().int().min(1),
  at: z.number().int(),
  result: z.unknown().optional(),
  error: z.unknown().optional(),
  upstream_id: z.string().optional(),
  /** Total tokens the upstream reported for a completed job (what the regular route reports to ingress). */
  usage_tokens: z.number().int().min(0).optional(),
  /** What the run learned and used (deployment, attempts, tokens and units), for the usage ledger. */
  outcome: CallOutcome.optional(),
  /**
   * A result too large for this message: the worker stored it with the jobs service first
   * (`PUT /v1/jobs/{id}/result`), for this attempt, as JSON text of this many bytes.
   */
  result_stored: z.object({ bytes: z.number().int().min(0) }).optional(),
  /** The HTTP status of the run's answer on a finished job (a failed one's own status), for the ledger. */
  status_code: z.number().int().min(100).max(599).optional(),
});
export type JobEvent = z.infer<typeof JobEvent>;

/** One budget scope's month counter, as a hold names it (see ingress's budgets/types.ts). */
export const BudgetHoldScope = z.object({
  scope: z.enum(["workspace", "key"]),
  key: z.string().min(1).max(400),
  limit_nano: z.number().int().min(0),
  hard: z.boolean(),
  alert_nano: z.number().int().min(0).optional(),
  mode: z.enum(["hard", "soft"]),
  alert_at_percent: z.number().int().optional(),
});

/** A budget reservation: what was held where, and what settling it needs to price the real usage. */
export const BudgetHold = z.object({
  scopes: z.array(BudgetHoldScope).min(1).max(2),
  reserved_nano: z.number().int().min(0),
  route: z.string().min(1).max(200),
  model: z.string().max(256).optional(),
  at: z.number().int(),
  /** When the hold stops counting if it is never settled (absent: a hold from before holds had one). */
  until: z.number().int().optional(),
  period: z.string().regex(/^\d{4}-\d{2}$/),
});
export type BudgetHold = z.infer<typeof BudgetHold>;

/** A token reservation of the rate limiter: where it was charged and how much; and the budget hold, if any. */
export const TokenTicket = z.object({
  workspace_id: z.string().min(1),
  key_id: z.string().min(1),
  bucket: z.number().int(),
  tokens: z.number().int().min(0),
  budget: BudgetHold.optional(),
});
export type TokenTicket = z.infer<typeof TokenTicket>;

/**
 * A finished async job's reservation and its real usage, published by jobs, consumed by one ingress
 * replica, which settles it as it settles a live call's.
 */
export const TokenSettlement = z.object({
  job_id: z.string().startsWith("job_"),
  ticket: TokenTicket,
  used: z.number().int().min(0),
  /** What the job used, priced by ingress to settle the ticket's budget hold. */
  outcome: CallOutcome.optional(),
});
export type TokenSettlement = z.infer<typeof TokenSettlement>;

/** The most settlements one `limits.settle` message carries. */
export const MAX_SETTLEMENT_BATCH = 64;

/**
 * What `limits.settle` carries: the settlements of jobs that finished together, in one message (a
 * JetStream message costs its publisher, the server and ingress far more than a settlement's bytes:
 * bench/README.md), or one settlement alone, the form jobs sent before, which ingress still takes
 * from a stream an older jobs service wrote to.
 */
export const TokenSettlements = z.union([TokenSettlement, z.object({ settlements: z.array(TokenSettlement).min(1).max(MAX_SETTLEMENT_BATCH) })]);
export type TokenSettlements = z.infer<typeof TokenSettlements>;

/** A message's settlements, whichever form it came in. */
export function settlementsOf(message: TokenSettlements): readonly TokenSettlement[] {
  return "settlements" in message ? message.settlements : [message];
}

/** The message id of settlements sent together (one job's id alone, as before groups). */
export function settlementBatchId(settlements: readonly Pick<TokenSettlement, "job_id">[]): string {
  return groupMessageId({ first: settlements[0]?.job_id ?? "", count: settlements.length });
}

/**
 * How a provider credential is sealed at rest (service-kit's Sealer under GATEWAY_MASTER_KEY): this
 * purpose, and a context binding it to one workspace and provider. Ingress stores credentials so,
 * `credentials.changed` carries them so, and the jobs service keeps an open job's credentials so.
 */
export const providerCredentialSealing = {
  purpose: "provider-credentials",
  context: (workspaceId: string, provider: string) => `${workspaceId}/${provider}`,
} as const;

/**
 * A workspace's provider credential was registered, replaced (`sealed` set) or removed (no `sealed`)
 * through ingress's admin API. Published by ingress, consumed by jobs, which applies it to the
 * workspace's unfinished jobs so their later attempts run with the current credentials. `sealed` is
 * the credential as ingress stores it (see providerCredentialSealing), so the message is safe on the
 * bus. `version` (microseconds, the database's clock at the change) orders changes to one credential.
 */
export const CredentialChanged = z.object({
  workspace_id: z.string().min(1),
  provider: z.string().min(1),
  sealed: z.string().min(1).optional(),
  version: z.number().int().min(1),
});
export type CredentialChanged = z.infer<typeof CredentialChanged>;

/**
 * A budget crossed its alert level or was reached, once per scope and month: published by the
 * ingress replica whose settlement crossed it, for the console and any listener.
 */
export const BudgetAlert = z.object({
  workspace_id: z.string().min(1),
  key_id: z.string().min(1).optional(),
  scope: z.enum(["workspace", "key"]),
  threshold: z.enum(["alert", "budget"]),
  period: z.string(),
  mode: z.enum(["hard", "soft"]),
  budget_usd: z.number(),
  alert_at_percent: z.number().int().optional(),
  at: z.number().int(),
});
export type BudgetAlert = z.infer<typeof BudgetAlert>;

/**
 * A job's attempt was superseded (the jobs service retried it past its deadline, or failed the job):
 * a worker running this attempt, or any earlier one, aborts it and reports nothing, and a worker
 * handed one of those attempts later skips it. Broadcast, so every replica holding it hears.
 */
export const JobCancel = z.object({
  job_id: z.string().startsWith("job_"),
  /** Every attempt up to and including this one is superseded. */
  attempt: z.number().int().min(1),
});
export type JobCancel = z.infer<typeof JobCancel>;

/**
 * Jobs whose rows now say finished: published by the jobs replica that applied each finish, so a
 * poll waiting for one on any replica (`Prefer: wait`) answers at once. A lost notice only makes
 * such a poll answer at the end of its wait, from the row as it is then.
 */
export const JobsFinished = z.object({
  job_ids: z.array(z.string().startsWith("job_")).min(1),
});
export type JobsFinished = z.infer<typeof JobsFinished>;

export const broadcastSubjects = {
  "identity.changed": IdentityChanged,
  "budget.alert": BudgetAlert,
  "jobs.cancel": JobCancel,
  "jobs.finished": JobsFinished,
} as const;

export const workSubjects = {
  "jobs.work.inference": JobWork,
  "jobs.work.tools": JobWork,
  "jobs.events": JobEvent,
  "limits.settle": TokenSettlements,
  "credentials.changed": CredentialChanged,
  "usage.records": UsageRecords,
  "usage.bodies": CapturedBodiesBatch,
} as const;

export type BroadcastSubject = keyof typeof broadcastSubjects;
export type WorkSubject = keyof typeof workSubjects;
export type BroadcastMessage<S extends BroadcastSubject> = z.infer<(typeof broadcastSubjects)[S]>;
export type WorkMessage<S extends WorkSubject> = z.infer<(typeof workSubjects)[S]>;
