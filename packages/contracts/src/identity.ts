import { z } from "zod";

export const planNames = ["plus", "pro", "enterprise"] as const;
export const PlanName = z.enum(planNames);
export type PlanName = z.infer<typeof PlanName>;

export const Limits = z.strictObject({
  requests_per_minute: z.number().int().positive().optional(),
  tokens_per_minute: z.number().int().positive().optional(),
});
export type Limits = z.infer<typeof Limits>;

/**
 * What ingress tells the other services about the caller, signed with HMAC in the identity header.
 * `models` holds the allow-lists that apply (the workspace's, then the key's if it narrows them),
 * each a list of names or "*" globs: a model is allowed when it matches a pattern of every list.
 * `tools` is the effective tool list (the workspace's intersected with the key's).
 */
export const Identity = z.object({
  workspace_id: z.string().min(1),
  key_id: z.string().min(1),
  plan: PlanName,
  models: z.array(z.array(z.string())),
  tools: z.array(z.string()),
});
export type Identity = z.infer<typeof Identity>;

/** Header names used between services. Ingress strips every client-supplied `x-gw-*` header. */
export const internalHeaders = {
  identity: "x-gw-identity",
  requestId: "x-request-id",
  /**
   * Total tokens the upstream reported for a model call, sent back to ingress so the token limit
   * can be reconciled: a response header on JSON answers, an HTTP trailer on streams. Inference sends
   * it only for a call without an outcome to carry it (`t` in `outcome` otherwise). Ingress removes
   * it before the answer reaches the client.
   */
  usageTokens: "x-gw-usage-tokens",
  /**
   * An enterprise workspace's own provider credentials for this call: a JSON map of provider name
   * to key, sealed (AES-256-GCM) under a key derived from the internal secret, bound to the workspace.
   */
  credentials: "x-gw-credentials",
  /**
   * On a job creation: the token reservation ingress made for it (a `TokenTicket` as JSON), so the
   * jobs service can have it settled against the job's real usage once the job has finished.
   */
  tokenTicket: "x-gw-token-ticket",
  /**
   * What the call learned and used (a `CallOutcome` in formatCallOutcome's form), sent by inference and tools back to
   * ingress for the usage record: a response header on JSON answers, an HTTP trailer on streams.
   */
  outcome: "x-gw-outcome",
  /**
   * Set by jobs on an accepted job creation (its value the job id): the job's usage record is
   * published by jobs when the job finishes, so ingress publishes none for this request.
   */
  recordDeferred: "x-gw-record-deferred",
  /**
   * On a job creation whose workspace keeps detailed logs: the days to keep its bodies. Jobs then
   * publishes them, with the job's result, when the job has finished (ingress publishes none).
   */
  captureDays: "x-gw-capture-days",
  /** On an internal service's error answer: the envelope's error type, for the usage record. */
  errorType: "x-gw-error-type",
} as const;
export const internalHeaderPrefix = "x-gw-";
