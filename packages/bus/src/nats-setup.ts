import { AckPolicy, DeliverPolicy, DiscardPolicy, NatsError, RetentionPolicy, StorageType, headers as createHeaders, nanos } from "nats";
import type { JetStreamManager, MsgHdrs, StreamConfig } from "nats";
import { workSubjects } from "@gw/contracts";
import { BusUsageError } from "./messages";
import { SIGNATURE_HEADER } from "./nats-signing";
import type { BusLogger } from "./types";

/** JetStream dedupes a Nats-Msg-Id seen within this window; the in-process bus uses the same. */
export const DEDUPE_WINDOW_MS = 60 * 60 * 1000;

const NAMESPACE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

export function assertNamespace(namespace: string): void {
  if (!NAMESPACE.test(namespace)) {
    throw new BusUsageError(`bus namespace "${namespace}" must be dot-separated tokens of [A-Za-z0-9_-]`);
  }
}

export function natsSubjectOf(namespace: string, subject: string): string {
  return `${namespace}.${subject}`;
}

/**
 * Work subjects live in two streams: usage records in their own, so a usage service that is down
 * for days fills only that stream, within its own limits, and never pushes out jobs' work.
 */
export type StreamKind = "work" | "usage";
export const streamKinds: readonly StreamKind[] = ["work", "usage"];

export function streamKindOf(subject: string): StreamKind {
  return subject.startsWith("usage.") ? "usage" : "work";
}

/** The stream of a namespace's kind of work: `GW_WORK`, `GW_USAGE`. */
export function streamNameOf(namespace: string, kind: StreamKind = "work"): string {
  return `${namespace.toUpperCase().replace(/[^A-Z0-9_]/g, "_")}_${kind.toUpperCase()}`;
}

/**
 * Limits of the usage stream: records wait here while the usage service is down. At the limit the
 * stream refuses new records (discard new) rather than dropping stored ones, and publishers keep
 * theirs in memory and retry; docs/operations.md says what to alert on first. A message holds up to
 * 512 records (a few at a light load), so a million is days of backlog at a moderate load and tens
 * of GB in practice (a typical record is about 215 bytes as a row). A count, not max_bytes:
 * JetStream reserves a byte limit against the server's store up front, and a server shared by
 * several namespaces (or too small) would then refuse the stream.
 */
export const USAGE_STREAM_MAX_AGE_MS = 14 * 24 * 60 * 60 * 1000;
export const USAGE_STREAM_MAX_MSGS = 1_000_000;

/**
 * All work subjects share one stream, whose consumer names must be unique: the subject is part of
 * the name so the same durable (say "worker") can be used on two subjects.
 */
export function consumerNameOf(durable: string, subject: string): string {
  return `${durable}_${subject.replace(/\./g, "_")}`;
}

const STREAM_NOT_FOUND = 10059;
const CONSUMER_NOT_FOUND = 10014;

function apiErrorCode(err: unknown): number | undefined {
  return err instanceof NatsError ? err.api_error?.err_code : undefined;
}

export function isMissingResource(err: unknown): boolean {
  const code = apiErrorCode(err);
  if (code === STREAM_NOT_FOUND || code === CONSUMER_NOT_FOUND) return true;
  // The pull iterator reports these as plain messages or status codes rather than API errors.
  const message = err instanceof Error ? err.message : "";
  return /consumer (not found|deleted)|stream not found|no responders/i.test(message);
}

/**
 * A work-queue stream: a message is removed once acked, so disk stays bounded and a re-created
 * durable sees only unfinished work, never a replay of done jobs. The price is one durable per
 * subject, which is how the mesh uses it (one worker kind per job subject, replicas share it).
 * Messages enqueued before any consumer exists wait for it (an interest stream would drop them).
 */
export async function ensureStreams(jsm: JetStreamManager, namespace: string, replicas: number, logger: BusLogger): Promise<void> {
  for (const kind of streamKinds) await ensureStream(jsm, namespace, replicas, logger, kind);
}

export async function ensureStream(jsm: JetStreamManager, namespace: string, replicas: number, logger: BusLogger, kind: StreamKind = "work"): Promise<string> {
  const name = streamNameOf(namespace, kind);
  const subjects = Object.keys(workSubjects)
    .filter((s) => streamKindOf(s) === kind)
    .map((s) => natsSubjectOf(namespace, s))
    .sort();
  const limits: Partial<StreamConfig> =
    kind === "usage"
      ? { discard: DiscardPolicy.New, max_age: nanos(USAGE_STREAM_MAX_AGE_MS), max_msgs: USAGE_STREAM_MAX_MSGS }
      : { discard: DiscardPolicy.Old };
  const desired: Partial<StreamConfig> & { name: string } = {
    name,
    subjects,
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    ...limits,
    duplicate_window: nanos(DEDUPE_WINDOW_MS),
    num_replicas: replicas,
  };
  let existing: StreamConfig;
  try {
    existing = (await jsm.streams.info(name)).config;
  } catch (err) {
    if (apiErrorCode(err) !== STREAM_NOT_FOUND) throw err;
    try {
      await jsm.streams.add(desired);
      logger.info({ stream: name, subjects }, "bus: created work stream");
      return name;
    } catch (addErr) {
      // Another replica may have created it between our info and add; fall through to compare.
      existing = (await jsm.streams.info(name).catch(() => Promise.reject(addErr))).config;
    }
  }
  if (existing.retention !== RetentionPolicy.Workqueue) {
    throw new BusUsageError(`stream ${name} exists with retention "${existing.retention}", expected workqueue`);
  }
  // Sanitising the namespace into a stream name can map two namespaces to one name; never take
  // over a stream that carries another namespace's subjects.
  const foreign = existing.subjects.filter((s) => !s.startsWith(`${namespace}.`));
  if (foreign.length > 0) {
    throw new BusUsageError(`stream ${name} already carries subjects of another namespace: ${foreign.join(", ")}`);
  }
  const sameSubjects = [...existing.subjects].sort().join(",") === subjects.join(",");
  if (!sameSubjects || existing.duplicate_window !== desired.duplicate_window) {
    await jsm.streams.update(name, { ...existing, subjects, duplicate_window: desired.duplicate_window });
    logger.info({ stream: name, subjects }, "bus: updated work stream");
  }
  return name;
}

export interface ConsumerSpec {
  stream: string;
  name: string;
  filterSubject: string;
  ackWaitMs: number;
  maxDeliver: number;
}

export async function ensureConsumer(jsm: JetStreamManager, spec: ConsumerSpec): Promise<void> {
  const ackWait = nanos(spec.ackWaitMs);
  try {
    const info = await jsm.consumers.info(spec.stream, spec.name);
    if (info.config.ack_wait !== ackWait || info.config.max_deliver !== spec.maxDeliver) {
      await jsm.consumers.update(spec.stream, spec.name, { ack_wait: ackWait, max_deliver: spec.maxDeliver });
    }
    return;
  } catch (err) {
    if (apiErrorCode(err) !== CONSUMER_NOT_FOUND) throw err;
  }
  try {
    await jsm.consumers.add(spec.stream, {
      durable_name: spec.name,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: spec.filterSubject,
      ack_wait: ackWait,
      max_deliver: spec.maxDeliver,
    });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/workqueue/i.test(message)) {
      throw new BusUsageError(
        `cannot create consumer ${spec.name} on ${spec.filterSubject}: another durable already consumes ` +
          `this work subject (${message}); a work subject has one durable`,
      );
    }
    throw err;
  }
}

/**
 * Bus headers go out lower-cased (see normalizeHeaders), with the message's signature, which is
 * set last so a caller's header of the same name cannot stand in for it.
 */
export function toNatsHeaders(headers: Record<string, string>, signature: string): MsgHdrs {
  const h = createHeaders();
  for (const [name, value] of Object.entries(headers)) h.set(name, value);
  h.set(SIGNATURE_HEADER, signature);
  return h;
}

export function fromNatsHeaders(headers: MsgHdrs | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  for (const name of headers.keys()) {
    const key = name.toLowerCase();
    // Nats-* headers are JetStream's own (dedupe id, stream source...), not the sender's.
    // The signature is the bus's own too, checked before a handler runs.
    if (key.startsWith("nats-") || key === SIGNATURE_HEADER) continue;
    out[key] = headers.get(name);
  }
  return out;
}
