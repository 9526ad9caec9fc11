import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createClient, type RedisClientType } from "redis";
import type { Logger } from "@gw/logger";
import type { Admission, AdmitRequest, Limiter, Ticket, WindowOptions } from "./types";
import { toAdmission } from "./window";

const script = readFileSync(new URL("./sliding-window.lua", import.meta.url), "utf8");
const scriptSha = createHash("sha1").update(script).digest("hex");

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
 * Commands fail at once while Redis is unreachable (no offline queue), so the caller can fail open
 * without waiting; the client reconnects in the background.
 */
export class RedisLimiter implements Limiter {
  readonly kind = "redis";
  private readonly client: RedisClientType;
  private readonly width: number;
  private readonly n: number;

  constructor(private readonly options: RedisLimiterOptions) {
    if (options.prefix.includes("{")) throw new Error("the Redis key prefix must not contain '{'");
    this.n = options.buckets;
    this.width = options.windowMs / options.buckets;
    this.client = createClient({
      url: options.url,
      disableOfflineQueue: true,
      commandOptions: { timeout: options.timeoutMs },
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

  /** Starts connecting; does not wait, so ingress serves (failing open) while Redis is down. */
  connect(): void {
    this.client.connect().catch(() => {
      // Already logged by the error handler; the reconnect strategy keeps trying.
    });
  }

  async admit(request: AdmitRequest): Promise<Admission> {
    const r = request;
    const reply = await this.run(this.keys(r.workspaceId, r.keyId), [
      "admit",
      this.clock(),
      String(this.width),
      String(this.n),
      String(r.workspace.requests),
      String(r.workspace.tokens),
      String(r.key.requests),
      String(r.key.tokens),
      String(r.tokens),
    ]);
    const [failed, waitMs, now, bucket, wsRequests, wsTokens, keyRequests, keyTokens] = (reply as number[]).map(Number) as [
      number, number, number, number, number, number, number, number,
    ];
    return toAdmission(r, { failed, waitMs, now, bucket, wsRequests, wsTokens, keyRequests, keyTokens }, this.width, this.n);
  }

  async settle(ticket: Ticket, actualTokens: number): Promise<void> {
    const delta = actualTokens - ticket.tokens;
    if (delta === 0) return;
    await this.run(this.keys(ticket.workspaceId, ticket.keyId), [
      "settle",
      this.clock(),
      String(this.width),
      String(this.n),
      String(ticket.bucket),
      String(delta),
    ]);
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    if (this.client.isOpen) this.client.destroy();
  }

  /** Both keys carry the workspace id as hash tag: one Redis Cluster slot, one script call. */
  private keys(workspaceId: string, keyId: string): string[] {
    const tag = `${this.options.prefix}rl:{${workspaceId}}`;
    return [`${tag}:ws`, `${tag}:key:${keyId}`];
  }

  private clock(): string {
    return this.options.now ? String(this.options.now()) : "";
  }

  private async run(keys: string[], args: string[]): Promise<unknown> {
    try {
      return await this.client.evalSha(scriptSha, { keys, arguments: args });
    } catch (err) {
      if (!(err as Error).message?.startsWith("NOSCRIPT")) throw err;
      return this.client.eval(script, { keys, arguments: args });
    }
  }
}
