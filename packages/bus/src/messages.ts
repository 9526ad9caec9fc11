import { z } from "zod";
import { broadcastSubjects, workSubjects } from "@gw/contracts";
import type { BroadcastMessage, BroadcastSubject, WorkMessage, WorkSubject } from "@gw/contracts";
import { SIGNATURE_HEADER } from "./nats-signing";
import type { ConsumeOptions } from "./types";

/** Thrown by publish/enqueue when a message does not match its subject's schema. */
export class InvalidMessageError extends Error {
  readonly code = "invalid_message";
  constructor(
    readonly subject: string,
    readonly issues: readonly z.core.$ZodIssue[],
    detail: string,
  ) {
    super(`invalid message for bus subject "${subject}": ${detail}`);
    this.name = "InvalidMessageError";
  }
}

/**
 * Thrown by enqueue when a message is larger than the bus carries (NATS's `max_payload`, 1 MiB
 * unless the server is configured otherwise). Nothing was sent; sending it again cannot succeed.
 */
export class PayloadTooLargeError extends Error {
  readonly code = "payload_too_large";
  constructor(
    readonly subject: string,
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(`message for bus subject "${subject}" is ${bytes} bytes; the bus carries at most ${maxBytes}`);
    this.name = "PayloadTooLargeError";
  }
}

/** Throws PayloadTooLargeError when `payload` is over `maxBytes`. */
export function assertPayloadSize(subject: string, payload: Uint8Array | string, maxBytes: number): void {
  const bytes = typeof payload === "string" ? Buffer.byteLength(payload) : payload.byteLength;
  if (bytes > maxBytes) throw new PayloadTooLargeError(subject, bytes, maxBytes);
}

/** Thrown when a bus is used after close() or with bad options. */
export class BusUsageError extends Error {
  readonly code = "bus_usage";
  constructor(message: string) {
    super(message);
    this.name = "BusUsageError";
  }
}

function parseWith(schema: z.ZodType, subject: string, value: unknown): unknown {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new InvalidMessageError(subject, result.error.issues, z.prettifyError(result.error));
  }
  return result.data;
}

export function isBroadcastSubject(subject: string): subject is BroadcastSubject {
  return Object.hasOwn(broadcastSubjects, subject);
}

export function isWorkSubject(subject: string): subject is WorkSubject {
  return Object.hasOwn(workSubjects, subject);
}

// Subjects come typed from callers, but a cast or a config value could still pass anything.
export function assertBroadcastSubject(subject: string): asserts subject is BroadcastSubject {
  if (!isBroadcastSubject(subject)) throw new BusUsageError(`unknown broadcast subject "${subject}"`);
}

export function assertWorkSubject(subject: string): asserts subject is WorkSubject {
  if (!isWorkSubject(subject)) throw new BusUsageError(`unknown work subject "${subject}"`);
}

export function parseBroadcast<S extends BroadcastSubject>(subject: S, value: unknown): BroadcastMessage<S> {
  assertBroadcastSubject(subject);
  // The indexed schema is a union over all subjects; the lookup guarantees it is S's schema.
  return parseWith(broadcastSubjects[subject], subject, value) as BroadcastMessage<S>;
}

export function parseWork<S extends WorkSubject>(subject: S, value: unknown): WorkMessage<S> {
  assertWorkSubject(subject);
  return parseWith(workSubjects[subject], subject, value) as WorkMessage<S>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Returns undefined for bytes that are not JSON, so the caller treats them as an invalid message. */
export function decodeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(data)) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Copies a message the way the wire would: the in-process bus uses this so that a handler cannot
 * mutate the sender's object and so that embedded mode sees exactly what the mesh would (a Date
 * becomes a string, undefined fields vanish) instead of hiding serialisation bugs until production.
 */
export function wireCopy<T>(value: T): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}

// RFC 7230 token for names; values must not break the header block.
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const HEADER_VALUE = /^[^\r\n]*$/;

/**
 * Lower-cases names so `X-Request-Id` and `x-request-id` are one header on both implementations
 * (NATS header lookups are case-sensitive). Names starting with `nats-` are reserved for JetStream,
 * and the NATS bus's signature header for the bus.
 */
export function normalizeHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (!HEADER_NAME.test(name) || key.startsWith("nats-") || key === SIGNATURE_HEADER) {
      throw new BusUsageError(`invalid bus header name "${name}"`);
    }
    if (typeof value !== "string" || !HEADER_VALUE.test(value)) {
      throw new BusUsageError(`invalid value for bus header "${name}"`);
    }
    out[key] = value;
  }
  return out;
}

export interface ResolvedConsumeOptions {
  durable: string;
  maxDeliver: number;
  ackWaitMs: number;
  concurrency: number;
  retryDelayMs: number;
  pullExpiresMs: number;
}

const DURABLE = /^[A-Za-z0-9_-]{1,64}$/;

function positiveInt(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < 1) throw new BusUsageError(`consume option ${name} must be a positive integer, got ${v}`);
  return v;
}

export function resolveConsumeOptions(opts: ConsumeOptions): ResolvedConsumeOptions {
  // The durable becomes part of a NATS consumer name, where dots and wildcards are not allowed.
  if (!DURABLE.test(opts.durable)) {
    throw new BusUsageError(`durable "${opts.durable}" must match ${DURABLE.source}`);
  }
  const retryDelayMs = opts.retryDelayMs ?? 1000;
  if (!Number.isFinite(retryDelayMs) || retryDelayMs < 0) {
    throw new BusUsageError(`consume option retryDelayMs must be >= 0, got ${retryDelayMs}`);
  }
  return {
    durable: opts.durable,
    maxDeliver: positiveInt("maxDeliver", opts.maxDeliver, 5),
    ackWaitMs: positiveInt("ackWaitMs", opts.ackWaitMs, 30_000),
    concurrency: positiveInt("concurrency", opts.concurrency, 1),
    retryDelayMs,
    pullExpiresMs: Math.max(1_000, positiveInt("pullExpiresMs", opts.pullExpiresMs, 10_000)),
  };
}

export function assertMsgId(msgId: unknown): asserts msgId is string {
  if (typeof msgId !== "string" || msgId.length === 0 || msgId.length > 256) {
    throw new BusUsageError("enqueue needs a msgId of 1 to 256 characters (it is the dedupe key)");
  }
}
