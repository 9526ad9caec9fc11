import { z } from "zod";
import { TokenTicket } from "./bus";
import { Identity } from "./identity";

/**
 * OpenAI's Files and Batch APIs, as the gateway serves them (`/v1/files`, `/v1/batches`): the
 * shapes of OpenAI's published OpenAPI document (`OpenAIFile`, `Batch`, `CreateBatchRequest`, the
 * batch input and output lines), so the official clients read them unchanged.
 */

/** The purposes a caller may upload for; the gateway writes `batch_output` files itself. */
export const uploadPurposes = ["batch"] as const;
export const filePurposes = ["batch", "batch_output"] as const;

/** OpenAI's expiry policy: seconds after creation, one hour to thirty days. */
export const ExpiresAfter = z.strictObject({
  anchor: z.literal("created_at"),
  seconds: z.coerce.number().int().min(3600).max(2_592_000),
});
export type ExpiresAfter = z.infer<typeof ExpiresAfter>;

/** Batch input files, and the output and error files of a batch, live thirty days unless told otherwise. */
export const DEFAULT_FILE_EXPIRY_SECONDS = 2_592_000;

export const FileObject = z.object({
  id: z.string(),
  object: z.literal("file"),
  bytes: z.number().int(),
  created_at: z.number().int(),
  expires_at: z.number().int().optional(),
  filename: z.string(),
  purpose: z.enum(filePurposes),
  /** Deprecated by OpenAI, still required by its schema: always `processed` here. */
  status: z.literal("processed"),
});
export type FileObject = z.infer<typeof FileObject>;

export const FileList = z.object({
  object: z.literal("list"),
  data: z.array(FileObject),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

export const FileDeleted = z.object({ id: z.string(), object: z.literal("file"), deleted: z.literal(true) });

/** The routes a batch may run, as the endpoint it names. */
export const batchEndpoints = ["/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/completions"] as const;

/** Our file and batch ids, as the route table matches them. */
export const FILE_ID = /^file-[A-Za-z0-9]{1,64}$/;
export const BATCH_ID = /^batch_[A-Za-z0-9]{1,64}$/;

/** Text Postgres can keep: no U+0000, which a text column refuses. */
const storable = (schema: z.ZodString) => schema.refine((value) => !value.includes("\u0000"), "must not contain U+0000");
export type BatchEndpoint = (typeof batchEndpoints)[number];

/** OpenAI's metadata: at most 16 pairs, keys up to 64 characters, values up to 512. */
export const Metadata = z
  .record(storable(z.string().max(64)), storable(z.string().max(512)))
  .refine((value) => Object.keys(value).length <= 16, "at most 16 key-value pairs")
  .nullable();

export const CreateBatchRequest = z.object({
  input_file_id: z.string().regex(FILE_ID, "must be a file id this gateway gave (file-…)"),
  endpoint: z.enum(batchEndpoints),
  completion_window: z.literal("24h"),
  metadata: Metadata.optional(),
  output_expires_after: ExpiresAfter.optional(),
});
export type CreateBatchRequest = z.infer<typeof CreateBatchRequest>;

export const batchStatuses = ["validating", "failed", "in_progress", "finalizing", "completed", "expired", "cancelling", "cancelled"] as const;
export type BatchStatus = (typeof batchStatuses)[number];

export const BatchError = z.object({
  code: z.string(),
  message: z.string(),
  param: z.string().nullable().optional(),
  line: z.number().int().nullable().optional(),
});
export type BatchError = z.infer<typeof BatchError>;

export const BatchRequestCounts = z.object({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() });

export const BatchUsage = z.object({
  input_tokens: z.number().int(),
  input_tokens_details: z.object({ cached_tokens: z.number().int() }),
  output_tokens: z.number().int(),
  output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
  total_tokens: z.number().int(),
});
export type BatchUsage = z.infer<typeof BatchUsage>;

export const Batch = z.object({
  id: z.string(),
  object: z.literal("batch"),
  endpoint: z.string(),
  errors: z.object({ object: z.literal("list"), data: z.array(BatchError) }).optional(),
  input_file_id: z.string(),
  completion_window: z.string(),
  status: z.enum(batchStatuses),
  output_file_id: z.string().optional(),
  error_file_id: z.string().optional(),
  created_at: z.number().int(),
  in_progress_at: z.number().int().optional(),
  expires_at: z.number().int().optional(),
  finalizing_at: z.number().int().optional(),
  completed_at: z.number().int().optional(),
  failed_at: z.number().int().optional(),
  expired_at: z.number().int().optional(),
  cancelling_at: z.number().int().optional(),
  cancelled_at: z.number().int().optional(),
  request_counts: BatchRequestCounts.optional(),
  usage: BatchUsage.optional(),
  metadata: z.record(z.string(), z.string()).nullable().optional(),
});
export type Batch = z.infer<typeof Batch>;

export const BatchList = z.object({
  object: z.literal("list"),
  data: z.array(Batch),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

/** One line of a batch's input file. */
export const BatchRequestInput = z.object({
  custom_id: storable(z.string().min(1).max(512)),
  method: z.literal("POST"),
  url: z.string(),
  body: z.record(z.string(), z.unknown()),
});
export type BatchRequestInput = z.infer<typeof BatchRequestInput>;

/** One line of a batch's output or error file. */
export const BatchRequestOutput = z.object({
  id: z.string(),
  custom_id: z.string(),
  response: z.object({ status_code: z.number().int(), request_id: z.string(), body: z.unknown() }).nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
});
export type BatchRequestOutput = z.infer<typeof BatchRequestOutput>;

/** The signed header (purpose `batch-admission`) on the jobs service's admission calls to ingress's admin port. */
export const admissionHeader = "x-gw-admission";
export const admissionPurpose = "batch-admission";
/** For one workspace and one body: the SHA-256 of the exact body sent, so a signature cannot be reused for another ask. */
export const AdmissionClaims = z.object({ workspace_id: z.string().min(1), body_sha256: z.string().regex(/^[0-9a-f]{64}$/) });

/** A batch's next lines, asked to be admitted under its key's limits and budgets, in order. */
export const AdmissionRequest = z.strictObject({
  workspace_id: z.string().min(1).max(128),
  key_id: z.string().min(1).max(128),
  route: z.enum(batchEndpoints),
  bodies: z.array(z.record(z.string(), z.unknown())).min(1).max(64),
});
export type AdmissionRequest = z.infer<typeof AdmissionRequest>;

export const AdmittedLine = z.union([
  /** Run it: with the reservation its job settles when it has run. */
  z.object({ kind: z.literal("admitted"), ticket: TokenTicket.optional() }),
  /** It will not run: the error the regular call would have had, with its status. */
  z.object({ kind: z.literal("refused"), status: z.number().int().min(400).max(599), error: z.unknown() }),
  /** The limits have no room for it now: ask again after this long (the lines after it were not tried). */
  z.object({ kind: z.literal("wait"), retry_after_ms: z.number().min(0) }),
]);
export type AdmittedLine = z.infer<typeof AdmittedLine>;

export const AdmissionAnswer = z.object({
  /** The key's identity now (its allow-lists may have changed since the batch was created). */
  identity: Identity.optional(),
  /** The workspace's own provider credentials, sealed for transit (`x-gw-credentials`). */
  credentials: z.string().optional(),
  /** Days to keep the lines' bodies when the workspace keeps detailed logs. */
  capture_days: z.number().int().optional(),
  /** One per body, in order, up to and including the first that must wait. */
  lines: z.array(AdmittedLine),
});
export type AdmissionAnswer = z.infer<typeof AdmissionAnswer>;
