import { ErrorCode, NatsError, connect } from "nats";
import type { JetStreamManager, Msg, NatsConnection } from "nats";
import type { BroadcastSubject, WorkSubject } from "@gw/contracts";
import {
  BusUsageError,
  assertBroadcastSubject,
  assertWorkSubject,
  assertMsgId,
  assertPayloadSize,
  decodeJson,
  encodeJson,
  normalizeHeaders,
  parseBroadcast,
  parseWork,
  resolveConsumeOptions,
} from "./messages";
import { natsAuthOptions } from "./nats-auth";
import type { NatsCredentials } from "./nats-auth";
import { startPullLoop } from "./nats-consumer";
import { createMessageSigner } from "./nats-signing";
import {
  assertNamespace,
  consumerNameOf,
  ensureConsumer,
  ensureStreams,
  fromNatsHeaders,
  natsSubjectOf,
  streamKindOf,
  streamNameOf,
  toNatsHeaders,
} from "./nats-setup";
import type { BroadcastHandler, Bus, BusLogger, ConsumeOptions, Consumer, MessageMeta, WorkHandler } from "./types";

export interface NatsBusOptions {
  /**
   * One server or several separated by commas. A user and password (`nats://user:pass@host:4222`)
   * or a token (`nats://token@host:4222`) in it are used to connect and never logged.
   */
  url: string;
  /** NATS_CREDS, read at start with readNatsCredentials: a `.creds` file or an NKey user seed. */
  credentials?: NatsCredentials;
  /**
   * GATEWAY_INTERNAL_SECRET. Every message sent is signed under a key derived from it, and every
   * message received must carry a valid signature: NATS credentials say who may connect, the
   * signature that a message comes from a gateway process.
   */
  secret: string;
  /** Prefixes every subject and names the JetStream stream, so deployments and test runs never meet. */
  namespace: string;
  logger: BusLogger;
  /**
   * Connection name shown by the NATS server (monitoring, `nats server report connections`). It
   * also names the reply inboxes (`_INBOX.<name>.…`), so the server's permissions can give each
   * service only its own (docs/nats.md).
   */
  name?: string;
  /** Stream replicas; 1 for a single server, 3 for a production cluster. */
  replicas?: number;
  /** Upper bound on close(): a drain cannot finish while the server is unreachable. */
  drainTimeoutMs?: number;
}

const PING_TIMEOUT_MS = 2_000;
/** NATS's default `max_payload`, for the moment before the server's INFO is known. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/**
 * Connects, makes sure the work stream exists, and returns a Bus. The connection retries for ever
 * (maxReconnectAttempts -1): a NATS restart must cost a pause, never a dead service. Core
 * subscriptions are restored by the client; pull consumers re-pull on reconnect and the pull loop
 * re-creates a stream or consumer that vanished.
 */
export async function createNatsBus(options: NatsBusOptions): Promise<Bus> {
  const { namespace, logger } = options;
  assertNamespace(namespace);
  const replicas = options.replicas ?? 1;
  const signer = createMessageSigner(options.secret);
  const nc = await connect({
    ...natsAuthOptions(options.url, options.credentials),
    name: options.name,
    inboxPrefix: inboxPrefixOf(options.name),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1_000,
    // Keep retrying when the server refuses the credentials after a reconnect (a rotation that
    // reached the server before this process): the default gives up for good on the second refusal.
    ignoreAuthErrorAbort: true,
    // Every request (each JetStream publish waits for its ack through one) would otherwise capture a
    // stack trace for the error it might raise: 3 to 5 % of the jobs and inference services' CPU in
    // the async benchmark's profile. Our errors say which subject and call failed without it.
    noAsyncTraces: true,
  }).catch((err: unknown) => {
    throw connectError(err);
  });
  const stream = streamNameOf(namespace);
  let jsm: JetStreamManager;
  try {
    jsm = await nc.jetstreamManager();
    await ensureStreams(jsm, namespace, replicas, logger);
  } catch (err) {
    await nc.close();
    throw err;
  }
  const js = nc.jetstream();
  const statusLog = logStatus(nc, logger);
  const consumers = new Set<Consumer>();
  const broadcastsInFlight = new Set<Promise<void>>();
  let closing: Promise<void> | null = null;

  function assertOpen(): void {
    if (closing || nc.isClosed()) throw new BusUsageError("bus is closed");
  }

  function onBroadcast<S extends BroadcastSubject>(subject: S, handler: BroadcastHandler<S>, msg: Msg): void {
    const verdict = signer.verify(msg.subject, msg.headers, msg.data);
    if (verdict !== "ok") {
      logger.warn({ subject, reason: verdict }, "bus: broadcast without a valid signature, dropped");
      return;
    }
    let message: Parameters<BroadcastHandler<S>>[0];
    try {
      message = parseBroadcast(subject, decodeJson(msg.data));
    } catch (err) {
      logger.warn({ subject, err }, "bus: broadcast message failed its schema, dropped");
      return;
    }
    const meta: MessageMeta = { subject, headers: fromNatsHeaders(msg.headers), redelivered: false, deliveryCount: 1 };
    const delivery: Promise<void> = Promise.resolve()
      .then(() => handler(message, meta))
      .catch((err: unknown) => logger.error({ subject, err }, "bus: broadcast handler failed"))
      .finally(() => broadcastsInFlight.delete(delivery));
    broadcastsInFlight.add(delivery);
  }

  return {
    durable: true,

    // The server's limit, learned at connect; a reconnect to a server with another limit updates it.
    get maxPayloadBytes() {
      return nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
    },

    async publish(subject, message, headers) {
      assertOpen();
      const payload = encodeJson(parseBroadcast(subject, message));
      const natsSubject = natsSubjectOf(namespace, subject);
      const signature = signer.sign(natsSubject, "", payload);
      nc.publish(natsSubject, payload, { headers: toNatsHeaders(normalizeHeaders(headers), signature) });
    },

    subscribe<S extends BroadcastSubject>(subject: S, handler: BroadcastHandler<S>) {
      assertOpen();
      assertBroadcastSubject(subject);
      const sub = nc.subscribe(natsSubjectOf(namespace, subject), {
        callback: (err, msg) => {
          if (err) logger.error({ subject, err }, "bus: broadcast subscription failed");
          else onBroadcast(subject, handler, msg);
        },
      });
      // close() drains every subscription, so only an explicit unsubscribe needs handling here.
      return () => {
        if (!nc.isClosed()) sub.unsubscribe();
      };
    },

    async enqueue(subject, message, opts) {
      assertOpen();
      const payload = encodeJson(parseWork(subject, message));
      assertPayloadSize(subject, payload, nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD);
      const headers = normalizeHeaders(opts.headers);
      assertMsgId(opts.msgId);
      const natsSubject = natsSubjectOf(namespace, subject);
      // Prefixed so the same id (a job id) can key messages on different subjects of the one
      // stream without JetStream dropping the second as a duplicate.
      const msgID = `${subject}:${opts.msgId}`;
      const natsHeaders = toNatsHeaders(headers, signer.sign(natsSubject, msgID, payload));
      const publish = () => js.publish(natsSubject, payload, { msgID, headers: natsHeaders });
      try {
        await publish();
      } catch (err) {
        // No stream answers: the server lost its store (or someone deleted the stream).
        if (!(err instanceof NatsError && err.code === ErrorCode.NoResponders)) throw err;
        await ensureStreams(jsm, namespace, replicas, logger);
        await publish();
      }
    },

    async consume<S extends WorkSubject>(subject: S, consumeOpts: ConsumeOptions, handler: WorkHandler<S>) {
      assertOpen();
      const opts = resolveConsumeOptions(consumeOpts);
      assertWorkSubject(subject);
      const consumerName = consumerNameOf(opts.durable, subject);
      const subjectStream = streamNameOf(namespace, streamKindOf(subject));
      const spec = {
        stream: subjectStream,
        name: consumerName,
        filterSubject: natsSubjectOf(namespace, subject),
        ackWaitMs: opts.ackWaitMs,
        maxDeliver: opts.maxDeliver,
      };
      await ensureConsumer(jsm, spec);
      const repair = async () => {
        await ensureStreams(jsm, namespace, replicas, logger);
        await ensureConsumer(jsm, spec);
      };
      const loop = startPullLoop({ js, logger, stream: subjectStream, consumerName, subject, repair, signer }, opts, handler);
      const handle: Consumer = {
        async stop() {
          await loop.stop();
          consumers.delete(handle);
        },
      };
      consumers.add(handle);
      return handle;
    },

    async ping() {
      if (closing || nc.isClosed()) return false;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS);
      });
      // A stream lookup proves both the connection and JetStream, which enqueue needs.
      const check = jsm.streams.info(stream).then(
        () => true,
        () => false,
      );
      try {
        return await Promise.race([check, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },

    close() {
      closing ??= (async () => {
        await Promise.allSettled([...consumers].map((c) => c.stop()));
        await drainWithin(nc, options.drainTimeoutMs ?? 10_000, logger);
        await Promise.allSettled([...broadcastsInFlight]);
        statusLog.stop();
        await statusLog.done;
      })();
      return closing;
    },
  };
}

/** `_INBOX.<name>` when the name is one subject token, so permissions can be per service. */
function inboxPrefixOf(name: string | undefined): string {
  return name && /^[A-Za-z0-9_-]+$/.test(name) ? `_INBOX.${name}` : "_INBOX";
}

/**
 * nats.js says "'Authorization Violation'" for every refusal; say what to check, naming the
 * settings and never their values.
 */
function connectError(err: unknown): unknown {
  const code = err instanceof NatsError ? err.code : undefined;
  if (code === ErrorCode.AuthorizationViolation || code === ErrorCode.AuthenticationExpired || code === ErrorCode.AuthenticationTimeout) {
    return new Error(`NATS refused the connection (${code}): check the user and password or token in NATS_URL, or the file NATS_CREDS names`, { cause: err });
  }
  if (code === ErrorCode.BadCreds) return new Error("NATS_CREDS: the credentials file could not be used", { cause: err });
  return err;
}

async function drainWithin(nc: NatsConnection, timeoutMs: number, logger: BusLogger): Promise<void> {
  if (nc.isClosed()) return;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  try {
    const result = await Promise.race([nc.drain().then(() => "drained" as const), timedOut]);
    if (result === "timeout") {
      logger.warn({ timeoutMs }, "bus: drain timed out, closing the NATS connection");
      await nc.close();
    }
  } catch (err) {
    logger.warn({ err }, "bus: drain failed, closing the NATS connection");
    if (!nc.isClosed()) await nc.close();
  } finally {
    clearTimeout(timer);
  }
}

function logStatus(nc: NatsConnection, logger: BusLogger): { done: Promise<void>; stop(): void } {
  const status = nc.status();
  const done = (async () => {
    for await (const s of status) {
      const fields = { type: s.type, data: typeof s.data === "string" ? s.data : JSON.stringify(s.data) };
      if (s.type === "disconnect" || s.type === "error") logger.warn(fields, "bus: NATS connection trouble");
      else if (s.type === "reconnect") logger.info(fields, "bus: NATS reconnected");
    }
  })().catch(() => undefined);
  return {
    done,
    // The status iterator does not end when the connection closes; it is a QueuedIterator at
    // runtime (typed only as AsyncIterable), whose stop() ends the loop above.
    stop() {
      if ("stop" in status && typeof status.stop === "function") status.stop();
    },
  };
}
