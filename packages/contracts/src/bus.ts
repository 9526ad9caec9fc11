import { z } from "zod";

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

/** Work for an async job, published by jobs, consumed by inference or tools. */
export const JobWork = z.object({
  job_id: z.string().startsWith("job_"),
  route: z.string().min(1),
  workspace_id: z.string().min(1),
  key_id: z.string().min(1),
  request: z.unknown(),
  attempt: z.number().int().min(1),
});
export type JobWork = z.infer<typeof JobWork>;

/** Outcome of an async job, published by the worker, applied idempotently by jobs. */
export const JobEvent = z.object({
  job_id: z.string().startsWith("job_"),
  status: z.string().min(1),
  attempt: z.number().int().min(1),
  at: z.number().int(),
  result: z.unknown().optional(),
  error: z.unknown().optional(),
});
export type JobEvent = z.infer<typeof JobEvent>;

export const broadcastSubjects = {
  "identity.changed": IdentityChanged,
} as const;

export const workSubjects = {
  "jobs.work.inference": JobWork,
  "jobs.work.tools": JobWork,
  "jobs.events": JobEvent,
} as const;

export type BroadcastSubject = keyof typeof broadcastSubjects;
export type WorkSubject = keyof typeof workSubjects;
export type BroadcastMessage<S extends BroadcastSubject> = z.infer<(typeof broadcastSubjects)[S]>;
export type WorkMessage<S extends WorkSubject> = z.infer<(typeof workSubjects)[S]>;
