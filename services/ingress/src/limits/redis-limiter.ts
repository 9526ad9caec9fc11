import { readFileSync } from "node:fs";
import { createClient, type RedisClientType } from "redis";
import type { Logger } from "@gw/logger";
import type { Admission, AdmitRequest, Limiter, Ticket, Unused, WindowOptions } from "./types";
import { RedisScript } from "./redis-script";
import { toAdmission } from "./window";

/** How long a settlement waits for its workspace's next admission before it is sent on its own. */
const SETTLE_DELAY_MS = 20;

/** A change to a past charge: a reservation replaced by the real usage, or a lease's unused part. */
interface Settlement {
  keyId: string;
  bucket: number;
  tokens: number;
  requests: number;
}

const script = new RedisScript(readFileSync(new URL("./sliding-window.lua", import.meta.url), "utf8"));

export interface RedisLimiterOptions extends WindowOptions {
  url: string;
  /** Prepended to every key, e.g. `gw:`; must not contain `{` (the hash tag follows it). */
  prefix: string;
  /** A call that takes longer counts as Redis being unavailable. */
  timeoutMs: number;
  logger: Logger;
}

/**
 * Limits shared by every ingress replica: one EVALSHA per admission checks and charges both scopes.
 * Settlements (real usage replacing a reservation, a lease's unused part given back) wait up to
 * SETTLE_DELAY_MS and ride along with the workspace's next admission, so a busy workspace costs one
 * round trip per admission; the rest are sent together when the delay runs out. Commands fail at once while Redis is unreachable (no
 * offline queue), so the caller can fail open without waiting; the client reconnects in the
 * background.
 */
export class RedisLimiter implements Limiter {
  readonly kind = "redis";
  private readonly client: RedisClientType;
  private readonly width: number;
  private readonly n: number;
  private readonly pending = new Map<string, Settlement[]>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: RedisLimiterOptions) {
    if (options.prefix.includes("{")) throw new Error("the Redis key prefix must not contain '{'");
    this.n = options.buckets;
    this.width = options.windowMs / options.buckets;
    this.client = createClient({
      url: options.url,
      disableOfflineQueue: true,
      socket: {
        connectTimeout: 2_000,
        reconnectStrategy: (retries) => Math.min(100 * 2 ** Math.min(retries, 5), 2_000),
      },
    }) as RedisClientType;
    let lastError = "";
    this.client.on("error", (err: Error) => {
      // Reconnect errors repeat every retry; log each distinct one once.
      if (err.message !== lastError) options.logger.warn({ err: err.message }, "redis connection error");
      lastError = err.message;
    });
    this.client.on("ready", () => {
      lastError = "";
    });
  }

  /** The connection, shared by the budgets (their calls then travel in the same writes as the limits'). */
  get connection(): RedisClientType {
    return this.client;
  }

  /** Starts connecting; does not wait, so ingress serves (failing open) while Redis is down. */
  connect(): void {
    this.client.connect().catch(() => {
      // Already logged by the error handler; the reconnect strategy keeps trying.
    });
  }

  async admit(request: AdmitRequest): Promise<Admission> {
    const r = request;
    const keys = this.keys(r.workspaceId, r.keyId);
    const args = [
      "admit",
      this.clock(),
      String(this.width),
      String(this.n),
      String(r.workspace.requests),
      String(r.workspace.tokens),
      String(r.key.requests),
      String(r.key.tokens),
      String(r.tokens),
      String(r.lease?.requests ?? 0),
      String(r.lease?.tokens ?? 0),
      String(r.lease?.share ?? 1),
    ];
    this.takeSettlements(r.workspaceId, keys, args);
    const reply = await this.run(keys, args);
    const [failed, waitMs, now, bucket, wsRequests, wsTokens, keyRequests, keyTokens, leased] = (reply as number[]).map(Number) as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const verdict = { failed, waitMs, now, bucket, wsRequests, wsTokens, keyRequests, keyTokens, leased };
    return toAdmission(r, verdict, this.width, this.n);
  }

  async settle(ticket: Ticket, actualTokens: number): Promise<void> {
    const delta = actualTokens - ticket.tokens;
    if (delta !== 0) this.enqueue(ticket.workspaceId, { keyId: ticket.keyId, bucket: ticket.bucket, tokens: delta, requests: 0 });
  }

  async release(unused: Unused): Promise<void> {
    if (unused.requests === 0 && unused.tokens === 0) return;
    this.enqueue(unused.workspaceId, { keyId: unused.keyId, bucket: unused.bucket, tokens: -unused.tokens, requests: -unused.requests });
  }

  private enqueue(workspaceId: string, settlement: Settlement): void {
    const queue = this.pending.get(workspaceId);
    if (queue) queue.push(settlement);
    else this.pending.set(workspaceId, [settlement]);
    this.flushTimer ??= setTimeout(() => void this.flush(), SETTLE_DELAY_MS);
  }

  /** Sends every waiting settlement, one script call per workspace (pipelined by the client). */
  async flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const workspaces = [...this.pending.keys()];
    await Promise.all(
      workspaces.map(async (workspaceId) => {
        const keys = [`${this.tag(workspaceId)}:ws`];
        const args = ["settle", this.clock(), String(this.width), String(this.n)];
        this.takeSettlements(workspaceId, keys, args);
        try {
          await this.run(keys, args);
        } catch (err) {
          this.options.logger.warn({ err: (err as Error).message }, "could not settle token reservations");
        }
      }),
    );
  }

  /** Moves the workspace's waiting settlements into a script call's keys and arguments. */
  private takeSettlements(workspaceId: string, keys: string[], args: string[]): void {
    const queue = this.pending.get(workspaceId);
    if (!queue) return;
    this.pending.delete(workspaceId);
    for (const s of queue) {
      const hash = `${this.tag(workspaceId)}:key:${s.keyId}`;
      let index = keys.indexOf(hash);
      if (index < 0) index = keys.push(hash) - 1;
      args.push(String(index + 1), String(s.bucket), String(s.tokens), String(s.requests));
    }
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    if (this.client.isReady) await this.flush();
    clearTimeout(this.flushTimer);
    if (this.client.isOpen) this.client.destroy();
  }

  /** Every key of a workspace carries its id as hash tag: one Redis Cluster slot, one script call. */
  private tag(workspaceId: string): string {
    return `${this.options.prefix}rl:{${workspaceId}}`;
  }

  private keys(workspaceId: string, keyId: string): string[] {
    return [`${this.tag(workspaceId)}:ws`, `${this.tag(workspaceId)}:key:${keyId}`];
  }

  private clock(): string {
    return this.options.now ? String(this.options.now()) : "";
  }

  /**
   * Runs the script within the time limit. The limit is our own cleared timer, not the client's
   * `timeout` option: that one arms an AbortSignal.timeout per command, which cannot be cleared and
   * builds a DOMException when it fires, for every command, long after the answer came back.
   */
  private async run(keys: string[], args: string[]): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis did not answer within ${this.options.timeoutMs} ms`)), this.options.timeoutMs);
    });
    try {
      return await Promise.race([script.run(this.client, keys, args), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
