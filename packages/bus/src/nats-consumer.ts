import type { WorkSubject } from "@gw/contracts";
import type { ConsumerMessages, JetStreamClient, JsMsg, Consumer as NatsConsumer } from "nats";
import { decodeJson, parseWork } from "./messages";
import type { ResolvedConsumeOptions } from "./messages";
import { fromNatsHeaders } from "./nats-setup";
import type { MessageSigner } from "./nats-signing";
import type { BusLogger, Consumer, MessageMeta, WorkHandler } from "./types";

const MAX_BACKOFF_MS = 5_000;

export interface PullLoopDeps {
  js: JetStreamClient;
  logger: BusLogger;
  stream: string;
  consumerName: string;
  subject: WorkSubject;
  /** Re-creates the stream and consumer when they vanished (a NATS server that lost its store). */
  repair(): Promise<void>;
  /** Checks each message's signature before anything else looks at it. */
  signer: MessageSigner;
}

/**
 * Pulls with one fetch at a time, asking only for as many messages as there are free handler
 * slots. Messages therefore never wait in a client buffer with their ack timer running, and a
 * second replica on the same durable gets whatever this one has no room for.
 */
export function startPullLoop<S extends WorkSubject>(deps: PullLoopDeps, opts: ResolvedConsumeOptions, handler: WorkHandler<S>): Consumer {
  const { js, logger, stream, consumerName, subject } = deps;
  const log = { subject, durable: opts.durable, consumer: consumerName };
  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  let currentFetch: ConsumerMessages | null = null;
  let wakeSleeper: (() => void) | null = null;

  async function sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeSleeper = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wakeSleeper = null;
  }

  async function handle(m: JsMsg): Promise<void> {
    const msgLog = { ...log, seq: m.seq, deliveryCount: m.info.deliveryCount };
    const verdict = deps.signer.verify(m.subject, m.headers, m.data);
    if (verdict !== "ok") {
      // Not from a gateway process (or altered): never retried, never handed on, and its content
      // is not logged (it is whatever the sender chose).
      logger.warn({ ...msgLog, reason: verdict }, "bus: work message without a valid signature, terminated");
      settle(m, "term");
      return;
    }
    const meta: MessageMeta = {
      subject,
      headers: fromNatsHeaders(m.headers),
      redelivered: m.redelivered,
      deliveryCount: m.info.deliveryCount,
    };
    let message: Parameters<WorkHandler<S>>[0];
    try {
      message = parseWork(subject, decodeJson(m.data)) as Parameters<WorkHandler<S>>[0];
    } catch (err) {
      // A bad payload fails the same way every time: retrying only delays the alarm.
      logger.error({ ...msgLog, err }, "bus: work message failed its schema, terminated");
      settle(m, "term");
      return;
    }
    // Tell the server we are alive so a long handler is not redelivered to someone else.
    const progress = setInterval(() => settle(m, "working"), Math.max(50, Math.floor(opts.ackWaitMs / 3)));
    try {
      await handler(message, meta);
      settle(m, "ack");
    } catch (err) {
      if (meta.deliveryCount >= opts.maxDeliver) {
        // term rather than nak: the server would stop delivering anyway, but in a work-queue
        // stream an unacked message would stay stored for ever.
        logger.error({ ...msgLog, err }, "bus: work handler failed on its last delivery, giving up");
        settle(m, "term");
      } else {
        logger.warn({ ...msgLog, err }, "bus: work handler failed, will redeliver");
        settle(m, "nak", opts.retryDelayMs);
      }
    } finally {
      clearInterval(progress);
    }
  }

  function settle(m: JsMsg, how: "ack" | "nak" | "term" | "working", delayMs?: number): void {
    try {
      if (how === "ack") m.ack();
      else if (how === "nak") m.nak(delayMs);
      else if (how === "term") m.term();
      else m.working();
    } catch (err) {
      // Only fails on a closed connection; the server redelivers after ack_wait, which is the
      // at-least-once contract anyway.
      logger.warn({ ...log, seq: m.seq, err }, `bus: could not ${how} a work message`);
    }
  }

  function dispatch(m: JsMsg): void {
    const running: Promise<void> = handle(m)
      .catch((err: unknown) => logger.error({ ...log, err }, "bus: unexpected error handling a work message"))
      .finally(() => inFlight.delete(running));
    inFlight.add(running);
  }

  async function run(): Promise<void> {
    let failures = 0;
    // Looked up once and again only after a failure: it costs a round trip to the server.
    let consumer: NatsConsumer | null = null;
    while (!stopping) {
      if (inFlight.size >= opts.concurrency) {
        await Promise.race(inFlight);
        continue;
      }
      try {
        consumer ??= await js.consumers.get(stream, consumerName);
        const batch = await consumer.fetch({
          max_messages: opts.concurrency - inFlight.size,
          // A pull is closed early on stop(), so this only bounds how long a silently lost pull could
          // stall the loop; the client re-pulls on reconnect.
          expires: opts.pullExpiresMs,
        });
        currentFetch = batch;
        if (stopping) batch.stop();
        let received = 0;
        for await (const m of batch) {
          received += 1;
          // Pulled after stop() began: hand it straight back rather than sit on it until ack_wait.
          if (stopping) settle(m, "nak");
          else dispatch(m);
        }
        // The server silently drops a pull for a consumer that no longer exists, so an empty
        // pull could mean "idle" or "deleted from under us" (it would then stay empty for ever).
        // A lookup tells them apart; on a missing consumer it throws and we repair below.
        if (received === 0 && !stopping) await consumer.info();
        failures = 0;
      } catch (err) {
        if (stopping) break;
        consumer = null;
        failures += 1;
        // The client retries by itself across reconnects; this only catches what it gives up on
        // (consumer deleted, stream gone, JetStream not ready after a server restart).
        if (failures === 1 || failures % 10 === 0) {
          logger.warn({ ...log, err, failures }, "bus: pulling work failed, retrying");
        }
        await sleep(Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(failures, 5)));
        if (!stopping) {
          await deps.repair().catch((repairErr: unknown) => {
            logger.warn({ ...log, err: repairErr }, "bus: could not re-create the stream or consumer yet");
          });
        }
      } finally {
        currentFetch = null;
      }
    }
  }

  const loop = run();
  let stopped: Promise<void> | null = null;
  return {
    stop() {
      stopped ??= (async () => {
        stopping = true;
        currentFetch?.stop();
        wakeSleeper?.();
        await loop;
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
      })();
      return stopped;
    },
  };
}
