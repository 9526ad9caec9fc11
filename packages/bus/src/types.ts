import type { BroadcastMessage, BroadcastSubject, WorkMessage, WorkSubject } from "@gw/contracts";

/**
 * The smallest logger the bus needs. pino's `Logger` satisfies it; the bus takes it as an option
 * rather than importing a logger package so it has no opinion on how logs are set up.
 */
export interface BusLogger {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}

export interface MessageMeta {
  /** The logical subject from the contracts map, without the namespace prefix. */
  subject: string;
  /** Header names are lower-cased on both implementations, as Node's HTTP server does. */
  headers: Record<string, string>;
  redelivered: boolean;
  /** 1 on the first delivery. Always 1 for broadcasts. */
  deliveryCount: number;
}

export interface ConsumeOptions {
  /** Consumer group name: every consumer with the same durable shares the work of a subject. */
  durable: string;
  /** Deliveries before a failing message is given up (terminated and logged). Default 5. */
  maxDeliver?: number;
  /**
   * How long a delivery may go unacknowledged before it is handed to another consumer. While a
   * handler runs, the bus keeps telling the server it is still working, so this is the time to
   * notice a crashed process, not a limit on how long a handler may take. Default 30 s.
   */
  ackWaitMs?: number;
  /** Handlers running at once for this consume call. Default 1. */
  concurrency?: number;
  /** Delay before a message whose handler threw is delivered again. Default 1 s. */
  retryDelayMs?: number;
  /**
   * How long one pull waits on the NATS server (at least 1 s). The server drops the pull of a
   * consumer deleted from under it without a word, so this is also how soon that is noticed and
   * repaired. Default 10 s; no meaning in the in-process bus.
   */
  pullExpiresMs?: number;
}

export interface EnqueueOptions {
  /** Deduplication key: a second enqueue with the same id on the same subject within 1 h is dropped. */
  msgId: string;
  headers?: Record<string, string>;
}

export interface Consumer {
  /** Stops pulling, waits for running handlers to finish (and be acked), keeps the durable. */
  stop(): Promise<void>;
}

export type BroadcastHandler<S extends BroadcastSubject> = (message: BroadcastMessage<S>, meta: MessageMeta) => void | Promise<void>;

export type WorkHandler<S extends WorkSubject> = (message: WorkMessage<S>, meta: MessageMeta) => Promise<void>;

export interface Bus {
  /**
   * The largest message (encoded JSON, in bytes) `enqueue` accepts: the NATS server's `max_payload`
   * (1 MiB by default), or the in-process bus's setting. Larger messages are refused with
   * PayloadTooLargeError, so a caller can say so instead of retrying.
   */
  readonly maxPayloadBytes: number;
  /**
   * Whether queued work survives this process (JetStream keeps it on disk; the in-process bus holds
   * it in memory). A service that publishes work checks this at start to publish again what was lost.
   */
  readonly durable: boolean;
  /** Core broadcast: nothing is kept, every current subscriber gets the message. */
  publish<S extends BroadcastSubject>(subject: S, message: BroadcastMessage<S>, headers?: Record<string, string>): Promise<void>;
  /** Returns the unsubscribe function. */
  subscribe<S extends BroadcastSubject>(subject: S, handler: BroadcastHandler<S>): () => void;
  /** Durable, at-least-once work, deduplicated by `msgId`. */
  enqueue<S extends WorkSubject>(subject: S, message: WorkMessage<S>, opts: EnqueueOptions): Promise<void>;
  /**
   * The message is acked when the handler resolves and delivered again after `retryDelayMs` when it
   * throws; a message that fails its schema is terminated and logged, never retried.
   * One durable per work subject (the NATS stream is a work queue): a second durable name on the
   * same subject is rejected.
   */
  consume<S extends WorkSubject>(subject: S, opts: ConsumeOptions, handler: WorkHandler<S>): Promise<Consumer>;
  /** For /readyz: true when the bus can carry work right now. */
  ping(): Promise<boolean>;
  /** Stops consumers (waiting for running handlers), drains, closes. Safe to call twice. */
  close(): Promise<void>;
}
