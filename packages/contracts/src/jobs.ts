import { z } from "zod";

/** Statuses the gateway itself sets; an upstream may report others (the set is open). */
export const jobStatuses = { queued: "queued", processing: "processing", completed: "completed", failed: "failed" } as const;
export const finishedJobStatuses: readonly string[] = [jobStatuses.completed, jobStatuses.failed];

/** `POST /v1/async/<route>`: the job, accepted. `created_at` is in Unix seconds, as OpenAI's objects. */
export const AsyncJobCreated = z.object({
  id: z.string().startsWith("job_"),
  status: z.string(),
  created_at: z.number().int(),
});
export type AsyncJobCreated = z.infer<typeof AsyncJobCreated>;

/**
 * `GET /v1/async/<route>/{job_id}`. `result` is exactly what the regular route answers; `error` is
 * the regular route's error envelope (OpenAI's, or Anthropic's for messages).
 */
export const AsyncJob = AsyncJobCreated.extend({
  completed_at: z.number().int().optional(),
  result: z.unknown().optional(),
  error: z.unknown().optional(),
});
export type AsyncJob = z.infer<typeof AsyncJob>;

/** A binary answer (speech) as a job result: its bytes, base64, and the content type it came with. */
export const BinaryJobResult = z.object({
  object: z.literal("binary"),
  content_type: z.string(),
  data: z.string(),
});
export type BinaryJobResult = z.infer<typeof BinaryJobResult>;

/** The header clients send to make a job creation safe to retry. */
export const idempotencyKeyHeader = "idempotency-key";
