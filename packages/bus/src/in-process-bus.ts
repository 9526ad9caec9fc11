import type { BroadcastSubject, WorkSubject } from "@gw/contracts";
import {
  BusUsageError,
  assertBroadcastSubject,
  assertWorkSubject,
  assertMsgId,
  normalizeHeaders,
  parseBroadcast,
  parseWork,
  resolveConsumeOptions,
  wireCopy,
  assertPayloadSize,
} from "./messages";
import type { ResolvedConsumeOptions } from "./messages";
import type { BroadcastHandler, Bus, BusLogger, ConsumeOptions, Consumer, MessageMeta, WorkHandler } from "./types";

export interface InProcessBusOptions {
  logger: BusLogger;
  /** How long a msgId is remembered for dedupe; JetStream's window in the mesh is 1 h too. */
  dedupeWindowMs?: number;
  /** Largest work message, as a NATS server's `max_payload` (default 8 MiB, a common production setting). */
  maxPayloadBytes?: number;
}

interface Envelope {
  payload: unknown;
  headers: Record<string, string>;
  deliveryCount: number;
}

interface Worker {
  concurrency: number;
  running: Set<Promise<void>>;
  handler: (message: unknown, meta: MessageMeta) => Promise<void>;
}

/** One per work subject: like the JetStream work-queue stream, a subject has a single durable. */
interface WorkQueue {
  subject: WorkSubject;
  durable: string | null;
  opts: ResolvedConsumeOptions | null;
  ready: Envelope[];
  workers: Worker[];
  nextWorker: number;
  pumpScheduled: boolean;
}

interface Subscription {
  handler: (message: unknown, meta: MessageMeta) => void | Promise<void>;
  active: boolean;
}

/**
 * The bus of the embedded (single-process) mode, with the semantics of the NATS bus: broadcasts
 * reach every subscriber asynchronously; work is at-least-once per durable with msgId dedupe,
 * delayed redelivery after a failure, maxDeliver and a concurrency bound. Nothing survives the
 * process, which is the accepted trade-off of embedded mode. ackWaitMs has no meaning here: a
 * delivery cannot be lost without the whole process going with it.
 */
export function createInProcessBus(options: InProcessBusOptions): Bus {
  const { logger } = options;
  const dedupeWindowMs = options.dedupeWindowMs ?? 60 * 60 * 1000;
  const maxPayloadBytes = options.maxPayloadBytes ?? 8 * 1024 * 1024;
  const subscriptions = new Map<BroadcastSubject, Set<Subscription>>();
  const queues = new Map<WorkSubject, WorkQueue>();
  // msgId key -> time it stops deduping; insertion order is expiry order, so pruning stops early.
  const seenIds = new Map<string, number>();
  const retryTimers = new Set<NodeJS.Timeout>();
  const broadcastsInFlight = new Set<Promise<void>>();
  let closed = false;

  function assertOpen(): void {
    if (closed) throw new BusUsageError("bus is closed");
  }

  function queueFor(subject: WorkSubject): WorkQueue {
    let q = queues.get(subject);
    if (!q) {
      q = { subject, durable: null, opts: null, ready: [], workers: [], nextWorker: 0, pumpScheduled: false };
      queues.set(subject, q);
    }
    return q;
  }

  // Deliveries start on a later turn of the event loop, never inside the caller's stack, so a
  // handler that enqueues or throws cannot re-enter the code that triggered it.
  function schedulePump(q: WorkQueue): void {
    if (q.pumpScheduled || closed) return;
    q.pumpScheduled = true;
    setImmediate(() => {
      q.pumpScheduled = false;
      pump(q);
    });
  }

  function pump(q: WorkQueue): void {
    while (!closed && q.ready.length > 0) {
      const worker = pickFreeWorker(q);
      if (!worker) return;
      const envelope = q.ready.shift();
      if (envelope) deliver(q, worker, envelope);
    }
  }

  // Round-robin over workers with a free slot, so consumers sharing a durable share the work.
  function pickFreeWorker(q: WorkQueue): Worker | undefined {
    for (let i = 0; i < q.workers.length; i++) {
      const index = (q.nextWorker + i) % q.workers.length;
      const worker = q.workers[index];
      if (worker && worker.running.size < worker.concurrency) {
        q.nextWorker = index + 1;
        return worker;
      }
    }
    return undefined;
  }

  function deliver(q: WorkQueue, worker: Worker, envelope: Envelope): void {
    envelope.deliveryCount += 1;
    const opts = q.opts;
    const meta: MessageMeta = {
      subject: q.subject,
      headers: { ...envelope.headers },
      redelivered: envelope.deliveryCount > 1,
      deliveryCount: envelope.deliveryCount,
    };
    const log = { subject: q.subject, durable: q.durable, deliveryCount: envelope.deliveryCount };
    const run = async (): Promise<void> => {
      let message: unknown;
      try {
        message = parseWork(q.subject, wireCopy(envelope.payload));
      } catch (err) {
        logger.error({ ...log, err }, "bus: work message failed its schema, terminated");
        return;
      }
      try {
        await worker.handler(message, meta);
      } catch (err) {
        if (!opts || envelope.deliveryCount >= opts.maxDeliver) {
          logger.error({ ...log, err }, "bus: work handler failed on its last delivery, giving up");
          return;
        }
        logger.warn({ ...log, err }, "bus: work handler failed, will redeliver");
        scheduleRetry(q, envelope, opts.retryDelayMs);
      }
    };
    const running: Promise<void> = run().finally(() => {
      worker.running.delete(running);
      schedulePump(q);
    });
    worker.running.add(running);
  }

  function scheduleRetry(q: WorkQueue, envelope: Envelope, delayMs: number): void {
    if (closed) return;
    const timer = setTimeout(() => {
      retryTimers.delete(timer);
      q.ready.push(envelope);
      schedulePump(q);
    }, delayMs);
    timer.unref();
    retryTimers.add(timer);
  }

  function isDuplicate(key: string): boolean {
    const now = Date.now();
    for (const [id, expiresAt] of seenIds) {
      if (expiresAt > now) break;
      seenIds.delete(id);
    }
    if (seenIds.has(key)) return true;
    seenIds.set(key, now + dedupeWindowMs);
    return false;
  }

  return {
    async publish(subject, message, headers) {
      assertOpen();
      const payload = wireCopy(parseBroadcast(subject, message));
      const normalized = normalizeHeaders(headers);
      for (const sub of subscriptions.get(subject) ?? []) {
        const meta: MessageMeta = { subject, headers: { ...normalized }, redelivered: false, deliveryCount: 1 };
        const delivery = new Promise<void>((resolve) => setImmediate(resolve))
          .then(async () => {
            if (!sub.active || closed) return;
            // Each subscriber gets its own copy, validated as if it had come off the wire.
            await sub.handler(parseBroadcast(subject, wireCopy(payload)), meta);
          })
          .catch((err: unknown) => logger.error({ subject, err }, "bus: broadcast handler failed"))
          .finally(() => broadcastsInFlight.delete(delivery));
        broadcastsInFlight.add(delivery);
      }
    },

    subscribe<S extends BroadcastSubject>(subject: S, handler: BroadcastHandler<S>) {
      assertOpen();
      assertBroadcastSubject(subject);
      const sub: Subscription = {
        // The message was parsed with S's schema just before the call.
        handler: (message, meta) => handler(message as Parameters<BroadcastHandler<S>>[0], meta),
        active: true,
      };
      let set = subscriptions.get(subject);
      if (!set) {
        set = new Set();
        subscriptions.set(subject, set);
      }
      set.add(sub);
      return () => {
        sub.active = false;
        subscriptions.get(subject)?.delete(sub);
      };
    },

    maxPayloadBytes,
    durable: false,

    async enqueue(subject, message, opts) {
      assertOpen();
      const text = JSON.stringify(parseWork(subject, message));
      assertPayloadSize(subject, text, maxPayloadBytes);
      const payload = JSON.parse(text) as unknown;
      const headers = normalizeHeaders(opts.headers);
      assertMsgId(opts.msgId);
      // Dedupe per subject, as the NATS bus does, so a job id can key both work and events.
      if (isDuplicate(`${subject}\n${opts.msgId}`)) return;
      const q = queueFor(subject);
      q.ready.push({ payload, headers, deliveryCount: 0 });
      schedulePump(q);
    },

    async consume<S extends WorkSubject>(subject: S, consumeOpts: ConsumeOptions, handler: WorkHandler<S>): Promise<Consumer> {
      assertOpen();
      assertWorkSubject(subject);
      const opts = resolveConsumeOptions(consumeOpts);
      const q = queueFor(subject);
      if (q.durable !== null && q.durable !== opts.durable) {
        throw new BusUsageError(`work subject "${subject}" is already consumed by durable "${q.durable}"; a work subject has one durable`);
      }
      q.durable = opts.durable;
      q.opts = opts; // the latest consume call wins, as a NATS consumer update does
      const worker: Worker = {
        concurrency: opts.concurrency,
        running: new Set(),
        handler: (message, meta) => handler(message as Parameters<WorkHandler<S>>[0], meta),
      };
      q.workers.push(worker);
      schedulePump(q);
      let stopped: Promise<void> | null = null;
      return {
        stop() {
          stopped ??= (async () => {
            q.workers = q.workers.filter((w) => w !== worker);
            while (worker.running.size > 0) await Promise.allSettled([...worker.running]);
          })();
          return stopped;
        },
      };
    },

    async ping() {
      return !closed;
    },

    async close() {
      if (closed) return;
      closed = true;
      for (const timer of retryTimers) clearTimeout(timer);
      retryTimers.clear();
      for (const set of subscriptions.values()) for (const sub of set) sub.active = false;
      subscriptions.clear();
      const running = [...queues.values()].flatMap((q) => q.workers.flatMap((w) => [...w.running]));
      for (const q of queues.values()) q.workers = [];
      await Promise.allSettled([...running, ...broadcastsInFlight]);
    },
  };
}
