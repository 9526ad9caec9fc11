import { z } from "zod";
import type { Identity } from "./identity";
import { groupMessageId } from "./message-id";

/**
 * The usage ledger's wire shapes: what a model or tool call used, as the service that made it
 * reports it, and the usage record of one request, as published (in batches) on `usage.records`.
 *
 * Tokens follow one convention whatever the provider (OpenTelemetry's GenAI one): `input_tokens`
 * counts every input token, cached reads and cache writes included; `output_tokens` every output
 * token, reasoning included. Each part is the provider's own reported number, so an Anthropic call's
 * `input_tokens` is its `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`, and
 * its `cached_input_tokens` and `cache_write_tokens` are the two reported counts as they came.
 * A field is absent (null in a record) when the provider did not report it.
 */
const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const amount = z.number().min(0).max(1e15);

export const TokenUsage = z.object({
  input_tokens: count.optional(),
  output_tokens: count.optional(),
  cached_input_tokens: count.optional(),
  cache_write_tokens: count.optional(),
  reasoning_tokens: count.optional(),
});
export type TokenUsage = z.infer<typeof TokenUsage>;

/** Units other than tokens, by name, in what the provider bills by. */
export const usageUnitNames = ["images", "audio_seconds", "characters", "pages", "calls", "credits", "search_units"] as const;
export const UsageUnitName = z.enum(usageUnitNames);
export type UsageUnitName = z.infer<typeof UsageUnitName>;
export const UsageUnits = z.partialRecord(UsageUnitName, amount);
export type UsageUnits = z.infer<typeof UsageUnits>;

/**
 * What a call's own service learned making it, sent back to ingress with the answer (the
 * `x-gw-outcome` header, or trailer on streams) and, for an async job, in its finishing event:
 * which deployment answered after retries and fallbacks, how long the upstream took, and what it used.
 */
export const CallOutcome = z.object({
  /** The public model, when the service read it from a body ingress does not parse (a multipart form). */
  model: z.string().min(1).max(256).optional(),
  /** The configured provider name that answered (or failed last). */
  provider: z.string().min(1).max(200).optional(),
  upstream_model: z.string().min(1).max(300).optional(),
  /** Upstream attempts made, retries and fallbacks included. */
  attempts: count.max(1000).optional(),
  /** Time spent waiting on the upstream, summed over attempts. */
  upstream_ms: amount.optional(),
  /** From the start of the call to the first streamed event the upstream sent. */
  ttft_ms: amount.optional(),
  usage: TokenUsage.optional(),
  units: UsageUnits.optional(),
});
export type CallOutcome = z.infer<typeof CallOutcome>;

/**
 * Milliseconds as whole microseconds: the resolution a usage record's times are kept at (its `_ms`
 * fields round to it, and the outcome header and the ledger's batch carry them so).
 */
export function wholeMicros(ms: number): number {
  return Math.round(ms * 1000);
}

/**
 * One request that reached a workspace, published once its answer is complete by the service that
 * saw the whole exchange: ingress for live calls and refusals, jobs for an async job (under the
 * request id of the call that created it). `request_id` is the `x-request-id` the caller saw; the
 * ledger keeps the first record of a request id and drops any later one.
 */
export const UsageRecord = z.object({
  request_id: z.string().min(1).max(128),
  /** Milliseconds since the epoch when ingress received the request. */
  started_at: z.number().int().min(0),
  duration_ms: amount,
  workspace_id: z.string().min(1).max(100),
  key_id: z.string().min(1).max(100),
  /** The public route, its path parameters as `{name}`: `/v1/chat/completions`, `/v1/async/{route}/{job_id}`. */
  route: z.string().min(1).max(200),
  /** The public model the caller asked for, when the route takes one. */
  model: z.string().min(1).max(256).optional(),
  /** The HTTP status the caller got (499: the caller went away first); an async job's: its outcome's. */
  status: z.number().int().min(100).max(599),
  /** The error envelope's `type` (OpenAI) or `error.type` (Anthropic) on a failure. */
  error_type: z.string().min(1).max(100).optional(),
  stream: z.boolean(),
  job_id: z.string().startsWith("job_").max(100).optional(),
  outcome: CallOutcome.optional(),
});
export type UsageRecord = z.infer<typeof UsageRecord>;

/**
 * Most records one `usage.records` message carries. A message's JetStream publish and ack cost its
 * publisher and the ledger about as much CPU whatever it holds (bench/README.md), so the fewer the
 * better; 512 typical records, as rows, are about 110 KB. A batch of unusually large ones that
 * would pass NATS's 1 MB is refused before it is sent (PayloadTooLargeError), and the publisher
 * sends it again in halves.
 */
export const MAX_USAGE_BATCH = 512;

/**
 * 1 to MAX_USAGE_BATCH items of any kind, checked by its length alone: `z.array(z.unknown())` would
 * visit and copy every item of every message the usage service receives, and each is checked on
 * its own later anyway.
 */
function batchOf(name: string) {
  return z.custom<unknown[]>((value) => Array.isArray(value) && value.length >= 1 && value.length <= MAX_USAGE_BATCH, {
    message: `${name} must be an array of 1 to ${MAX_USAGE_BATCH} items`,
  });
}

/**
 * What `usage.records` carries: records batched by their publisher, because a JetStream publish costs
 * the request path far more than a record's bytes (bench/README.md). The ledger deduplicates each
 * record by its request id, so a batch sent twice, or split and sent again, is still counted once.
 * The bus checks only the batch: the ledger checks each record against UsageRecord on its own, so a
 * malformed record costs itself, not its batch, and the request path (the publisher) checks nothing.
 */
export const UsageRecords = z.union([
  // Rows first: every publisher sends them, and a union that fails a branch first builds that
  // branch's issues for every message.
  z.object({
    // A field's path: names joined by dots, each starting with a letter (so never `__proto__`).
    fields: z
      .array(z.string().regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/))
      .min(1)
      .max(64),
    rows: batchOf("rows"),
  }),
  z.object({ records: batchOf("records") }),
]);
export type UsageRecords = z.infer<typeof UsageRecords>;

/**
 * The fields of a usage record in the order a row holds them (`usageRowsMessage`), nested ones by
 * their path. A row is an array: the names are written once per message rather than once per
 * record, about 40 % fewer bytes for every publisher to encode and sign and the ledger to verify and
 * parse.
 */
export const usageRowFields = [
  "request_id",
  "started_at",
  "duration_ms",
  "workspace_id",
  "key_id",
  "route",
  "model",
  "status",
  "error_type",
  "stream",
  "job_id",
  "outcome.model",
  "outcome.provider",
  "outcome.upstream_model",
  "outcome.attempts",
  "outcome.upstream_ms",
  "outcome.ttft_ms",
  "outcome.usage.input_tokens",
  "outcome.usage.output_tokens",
  "outcome.usage.cached_input_tokens",
  "outcome.usage.cache_write_tokens",
  "outcome.usage.reasoning_tokens",
  "outcome.units",
] as const;

/** A usage record as a row: its values in `usageRowFields`' order, null where a field is absent. */
export type UsageRecordRow = unknown[];

/** Where a row's outcome starts (`outcome.model`, then the rest of its fields in CallOutcome's order). */
export const USAGE_ROW_OUTCOME_AT = usageRowFields.indexOf("outcome.model");

/** A record as a row of `usageRowFields` (absent as null); unknown fields are left out. */
export function usageRowOf(r: UsageRecord): UsageRecordRow {
  return [
    r.request_id,
    r.started_at,
    r.duration_ms,
    r.workspace_id,
    r.key_id,
    r.route,
    r.model ?? null,
    r.status,
    r.error_type ?? null,
    r.stream,
    r.job_id ?? null,
    ...outcomeRowValues(r.outcome),
  ];
}

/** An outcome's values in a row's order, from `outcome.model` on (absent as null). */
export function outcomeRowValues(o: CallOutcome | undefined): unknown[] {
  const u = o?.usage;
  return [
    o?.model ?? null,
    o?.provider ?? null,
    o?.upstream_model ?? null,
    o?.attempts ?? null,
    o?.upstream_ms ?? null,
    o?.ttft_ms ?? null,
    u?.input_tokens ?? null,
    u?.output_tokens ?? null,
    u?.cached_input_tokens ?? null,
    u?.cache_write_tokens ?? null,
    u?.reasoning_tokens ?? null,
    o?.units ?? null,
  ];
}

/** The `usage.records` message for a batch: its records as rows. */
export function usageRowsMessage(records: readonly UsageRecord[]): UsageRecords {
  return usageRowsMessageOf(records.map(usageRowOf));
}

/** The `usage.records` message for a batch of rows. */
export function usageRowsMessageOf(rows: UsageRecordRow[]): UsageRecords {
  return { fields: [...usageRowFields], rows };
}

/**
 * The records a `usage.records` message carries, as objects (unchecked: the ledger checks each).
 * A row becomes an object by the message's own field list, so a publisher with more or fewer fields
 * than this version knows is still read; a null is an absent field, and a row that is not an array
 * is passed on as it is, for the check to refuse.
 */
export function usageRecordsOf(message: UsageRecords): unknown[] {
  if ("records" in message) return message.records;
  const { fields, rows } = message;
  if (fields.length === usageRowFields.length && fields.every((field, i) => field === usageRowFields[i])) {
    return rows.map((row) => (Array.isArray(row) ? recordOfRow(row) : row));
  }
  const paths = fields.map((field) => field.split("."));
  return rows.map((row) => (Array.isArray(row) ? objectOf(paths, row) : row));
}

const present = (value: unknown): boolean => value !== null && value !== undefined;

/**
 * objectOf for a row in this version's `usageRowFields`, what every current publisher sends: each
 * field stored under its literal name, in one order, so every record gets the same shape. The
 * ledger reads each record's fields several times (its check, its price, its row), and reads through
 * shapes made by names looked up at run time cost more each time.
 */
function recordOfRow(row: readonly unknown[]): Record<string, unknown> {
  const r: Record<string, unknown> = {};
  if (present(row[0])) r.request_id = row[0];
  if (present(row[1])) r.started_at = row[1];
  if (present(row[2])) r.duration_ms = row[2];
  if (present(row[3])) r.workspace_id = row[3];
  if (present(row[4])) r.key_id = row[4];
  if (present(row[5])) r.route = row[5];
  if (present(row[6])) r.model = row[6];
  if (present(row[7])) r.status = row[7];
  if (present(row[8])) r.error_type = row[8];
  if (present(row[9])) r.stream = row[9];
  if (present(row[10])) r.job_id = row[10];
  // The outcome exists only where a value of its does, as objectOf makes it.
  const outcome = outcomeOfRow(row, USAGE_ROW_OUTCOME_AT);
  if (outcome) r.outcome = outcome;
  return r;
}

/**
 * The outcome a row holds from `at` (outcomeRowValues' order), each field under its literal name;
 * undefined when it holds none, and a usage object only where a count is.
 */
export function outcomeOfRow(row: readonly unknown[], at: number): CallOutcome | undefined {
  if (!anyPresent(row, at, at + 11)) return undefined;
  const o: Record<string, unknown> = {};
  if (present(row[at])) o.model = row[at];
  if (present(row[at + 1])) o.provider = row[at + 1];
  if (present(row[at + 2])) o.upstream_model = row[at + 2];
  if (present(row[at + 3])) o.attempts = row[at + 3];
  if (present(row[at + 4])) o.upstream_ms = row[at + 4];
  if (present(row[at + 5])) o.ttft_ms = row[at + 5];
  if (anyPresent(row, at + 6, at + 10)) {
    const u: Record<string, unknown> = {};
    if (present(row[at + 6])) u.input_tokens = row[at + 6];
    if (present(row[at + 7])) u.output_tokens = row[at + 7];
    if (present(row[at + 8])) u.cached_input_tokens = row[at + 8];
    if (present(row[at + 9])) u.cache_write_tokens = row[at + 9];
    if (present(row[at + 10])) u.reasoning_tokens = row[at + 10];
    o.usage = u;
  }
  if (present(row[at + 11])) o.units = row[at + 11];
  return o as CallOutcome;
}

/** Whether any of `row[from]` to `row[to]` holds a value. */
function anyPresent(row: readonly unknown[], from: number, to: number): boolean {
  for (let i = from; i <= to; i++) if (present(row[i])) return true;
  return false;
}

function objectOf(paths: readonly string[][], row: readonly unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i < paths.length && i < row.length; i++) {
    const value = row[i];
    if (value === null || value === undefined) continue;
    const path = paths[i] as string[];
    let into = record;
    for (let depth = 0; depth < path.length - 1; depth++) {
      const name = path[depth] as string;
      const next = into[name];
      if (typeof next === "object" && next !== null) into = next as Record<string, unknown>;
      else into = into[name] = {};
    }
    into[path[path.length - 1] as string] = value;
  }
  return record;
}

/** The message id of a batch: the same batch sent again gets the same id, so the stream drops it. */
export function usageBatchId(records: readonly Pick<UsageRecord, "request_id">[]): string {
  return groupMessageId({ first: records[0]?.request_id ?? "", count: records.length });
}

/** usageBatchId for a batch of rows (the same id as for the batch's records). */
export function usageRowsBatchId(rows: readonly UsageRecordRow[]): string {
  const first = rows[0]?.[0];
  return groupMessageId({ first: typeof first === "string" ? first : "", count: rows.length });
}

/** Status recorded for a request whose caller went away before the answer was complete (nginx's). */
export const CLIENT_CLOSED_STATUS = 499;

/**
 * The identity ingress's admin port signs its calls to the usage service with: the operator, who
 * may read every workspace (no workspace id is `*`). Any other identity reads its own workspace only.
 */
export const operatorIdentity: Readonly<Identity> = Object.freeze({ workspace_id: "*", key_id: "admin", plan: "enterprise", models: [["*"]], tools: [] });

/** Whether a signed identity is the operator's (ingress's admin port), who may read every workspace. */
export function isOperatorIdentity(identity: Identity): boolean {
  return identity.workspace_id === operatorIdentity.workspace_id && identity.key_id === operatorIdentity.key_id;
}

/** The most of a request's or an answer's body a detailed log keeps, by default: 256 KB. */
export const DEFAULT_BODY_CAPTURE_BYTES = 256 * 1024;

/** One captured body: its text (redacted, at most the cap), and whether and from what size it was cut. */
export const CapturedBody = z.object({
  /** UTF-8 text: JSON (redacted), an assembled stream's answer, or a note for a body that is not text. */
  text: z.string(),
  truncated: z.boolean(),
  /** The body's size as it came, in bytes. */
  bytes: z.number().int().min(0),
  content_type: z.string().max(200).optional(),
});
export type CapturedBody = z.infer<typeof CapturedBody>;

/**
 * One request as the ledger answers it (`GET /admin/logs`, `/admin/logs/{request_id}`): the record
 * as published, flattened, with its cost. Nulls where the provider reported nothing; `cost_usd` is an
 * exact decimal string, null when no price was known.
 */
export const LedgerRecord = z.object({
  request_id: z.string(),
  started_at: z.string(),
  workspace_id: z.string(),
  key_id: z.string(),
  route: z.string(),
  model: z.string().nullable(),
  provider: z.string().nullable(),
  upstream_model: z.string().nullable(),
  attempts: z.number().int().nullable(),
  status: z.number().int(),
  error_type: z.string().nullable(),
  stream: z.boolean(),
  job_id: z.string().nullable(),
  duration_ms: z.number(),
  ttft_ms: z.number().nullable(),
  upstream_ms: z.number().nullable(),
  input_tokens: z.number().int().nullable(),
  output_tokens: z.number().int().nullable(),
  cached_input_tokens: z.number().int().nullable(),
  cache_write_tokens: z.number().int().nullable(),
  reasoning_tokens: z.number().int().nullable(),
  units: z.record(z.string(), z.number()),
  cost_usd: z.string().nullable(),
  price_version: z.string().nullable(),
  /** Present on `GET /admin/logs/{request_id}` when the request's bodies were captured (detailed logs). */
  request_body: CapturedBody.optional(),
  response_body: CapturedBody.optional(),
});
export type LedgerRecord = z.infer<typeof LedgerRecord>;

/**
 * A request's bodies for the detailed logs of an Enterprise workspace that turned them on, published
 * by ingress on `usage.bodies` (in batches), apart from the usage records (so metadata ingest stays
 * small and fast). Kept `retention_days` from `started_at`.
 */
export const CapturedBodies = z.object({
  request_id: z.string().min(1).max(128),
  started_at: z.number().int().min(0),
  workspace_id: z.string().min(1).max(100),
  key_id: z.string().min(1).max(100),
  retention_days: z.number().int().min(1).max(400),
  request: CapturedBody,
  response: CapturedBody.optional(),
});
export type CapturedBodies = z.infer<typeof CapturedBodies>;

/** Most requests' bodies one `usage.bodies` message carries (and at most about 900 KB of text in all). */
export const MAX_BODIES_BATCH = 64;

/** What `usage.bodies` carries. */
export const CapturedBodiesBatch = z.object({ bodies: z.array(CapturedBodies).min(1).max(MAX_BODIES_BATCH) });
export type CapturedBodiesBatch = z.infer<typeof CapturedBodiesBatch>;
