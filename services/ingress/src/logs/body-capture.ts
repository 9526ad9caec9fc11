import type { IncomingMessage } from "node:http";
import type { Request, Response } from "express";
import type { Bus } from "@gw/bus";
import { type CapturedBodies, type CapturedBody, DEFAULT_BODY_CAPTURE_BYTES, MAX_BODIES_BATCH } from "@gw/contracts";
import type { Logger } from "@gw/logger";
import { type BatchKind, BatchPublisher, cutBody, redactRawText, redactValue, type ServiceMetrics } from "@gw/service-kit";
import type { KeyPrincipal } from "../store/identity-store";
import { assembleStream } from "./assemble-stream";

/** An answer's bytes as they passed, up to the cap (and one byte more, to know it was cut). */
class Tee {
  readonly chunks: Buffer[] = [];
  kept = 0;
  bytes = 0;

  constructor(private readonly max: number) {}

  add(chunk: Buffer): void {
    this.bytes += chunk.length;
    if (this.kept > this.max) return;
    const room = this.max + 1 - this.kept;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(part);
    this.kept += part.length;
  }
}

declare global {
  namespace Express {
    interface Locals {
      /** The answer's bytes being kept for the detailed log (set when its workspace captures bodies). */
      bodyTee?: { tee: Tee; contentType: string | undefined };
    }
  }
}

/** What a closed request's detailed log needs, read at close; the message is made later, with others. */
interface Captured {
  requestId: string;
  startedAt: number;
  workspaceId: string;
  keyId: string;
  retentionDays: number;
  requestBody: unknown;
  requestJson: unknown;
  requestType: string | undefined;
  tee: Tee | undefined;
  responseType: string | undefined;
}

/** How many days the key's request bodies are kept, or undefined when they are not captured. */
export function captureRetention(principal: KeyPrincipal): number | undefined {
  const { workspace } = principal;
  // Detailed logs are the Enterprise plan's; a workspace moved off it stops capturing at once.
  if (workspace.plan !== "enterprise" || !workspace.logging.bodies || principal.keyLogging?.bodies === false) return undefined;
  return workspace.logging.retention_days;
}

/**
 * Requests' bodies to a message of `usage.bodies`: as many as fit in about 900 KB (NATS carries 1 MB
 * by default), 64 at most, under the first request's id and the count (the stream drops a batch sent
 * again; the ledger each request's bodies delivered again).
 */
const bodiesKind: BatchKind<CapturedBodies> = {
  noun: "detailed logs",
  metric: "gw_detailed_logs",
  maxBatch: MAX_BODIES_BATCH,
  maxBytes: 900 * 1024,
  bytesOf: (b) => Buffer.byteLength(b.request.text) + (b.response ? Buffer.byteLength(b.response.text) : 0) + 512,
  send: (bus, bodies) => bus.enqueue("usage.bodies", { bodies }, { msgId: `${bodies[0]?.request_id ?? ""}+${bodies.length}:bodies` }),
  idOf: (b) => b.request_id,
};

/** Requests whose bodies wait for the bus at most: past it, new ones are dropped and counted (`gw_detailed_logs_dropped_total`). */
const MAX_WAITING = 2_000;

/**
 * Detailed logs at ingress (docs/detailed-logs.md): for a key whose Enterprise workspace captures
 * bodies, the request's body and the answer's (a stream's assembled) are kept, redacted and cut at
 * the cap, and published on `usage.bodies`, apart from the usage record. On the request's path this
 * costs a reference to the body ingress already read and a copy of the answer's bytes as they pass;
 * parsing, assembling, redacting and serialising happen when the bodies' batch is formed, with
 * others, and a message carries many requests' bodies.
 */
export class BodyCapture {
  private readonly publisher: BatchPublisher<CapturedBodies>;

  constructor(
    bus: Bus,
    logger: Logger,
    metrics: ServiceMetrics,
    /** Configured provider keys this process can read, redacted wherever they appear. */
    private readonly secrets: readonly string[] = [],
    private readonly maxBytes = DEFAULT_BODY_CAPTURE_BYTES,
  ) {
    this.publisher = new BatchPublisher({ bus, logger, metrics, maxQueued: MAX_WAITING }, bodiesKind);
  }

  /** Starts keeping the answer's bytes, when the request's bodies are captured (the proxy calls it on the backend's answer). */
  tee(proxyRes: IncomingMessage, res: Response): void {
    const principal = res.locals.principal;
    if (!principal || captureRetention(principal) === undefined) return;
    const tee = new Tee(this.maxBytes);
    const contentType = proxyRes.headers["content-type"];
    res.locals.bodyTee = { tee, contentType };
    proxyRes.on("data", (chunk: Buffer) => tee.add(chunk));
  }

  /** The app's close listener: the request's bodies join the next batch, to be made with it. */
  readonly onClose = (req: Request, res: Response, durationMs: number): void => {
    const { principal, identity } = res.locals;
    if (!principal || !identity || !res.locals.target) return;
    const retentionDays = captureRetention(principal);
    // An accepted job's bodies come from jobs when it has run, with its result.
    if (retentionDays === undefined || res.locals.recordDeferred) return;
    const captured: Captured = {
      requestId: res.locals.requestId,
      startedAt: Math.round(Date.now() - durationMs),
      workspaceId: identity.workspace_id,
      keyId: identity.key_id,
      retentionDays,
      requestBody: req.body,
      requestJson: res.locals.json,
      requestType: req.headers["content-type"],
      tee: res.locals.bodyTee?.tee,
      responseType: res.locals.bodyTee?.contentType,
    };
    this.publisher.publish(() => this.messageOf(captured));
  };

  /** Sends what waits (at shutdown). */
  async flush(): Promise<void> {
    await this.publisher.flush();
    this.publisher.stop();
  }

  private messageOf(c: Captured): CapturedBodies {
    return {
      request_id: c.requestId,
      started_at: c.startedAt,
      workspace_id: c.workspaceId,
      key_id: c.keyId,
      retention_days: c.retentionDays,
      request: this.requestBody(c),
      ...(c.tee ? { response: this.responseBody(c.tee, c.responseType) } : {}),
    };
  }

  private requestBody(c: Captured): CapturedBody {
    const raw = Buffer.isBuffer(c.requestBody) ? c.requestBody : undefined;
    const bytes = raw?.length ?? 0;
    const type = contentTypeOf(c.requestType);
    if (c.requestJson !== undefined) return this.cut(JSON.stringify(redactValue(c.requestJson, this.secrets)), bytes, type);
    if (!raw || bytes === 0) return { text: "", truncated: false, bytes: 0 };
    // A form (an audio upload): its file is not text, and not kept.
    return { text: `[${type ?? "body"} of ${bytes} bytes, not kept]`, truncated: false, bytes, ...(type ? { content_type: type } : {}) };
  }

  private responseBody(tee: Tee, contentType: string | undefined): CapturedBody {
    const type = contentTypeOf(contentType);
    const whole = tee.kept <= this.maxBytes;
    const text = Buffer.concat(tee.chunks).subarray(0, this.maxBytes).toString("utf8");
    if (type === "application/json" && whole) {
      try {
        return this.cut(JSON.stringify(redactValue(JSON.parse(text), this.secrets)), tee.bytes, type);
      } catch {
        // Not JSON after all: kept as text below.
      }
    }
    if (type === "text/event-stream" && whole) {
      const assembled = assembleStream(text);
      if (assembled !== undefined) return this.cut(JSON.stringify(redactValue(assembled, this.secrets)), tee.bytes, type);
    }
    if (type !== undefined && !type.startsWith("text/") && type !== "application/json") {
      return { text: `[${type} of ${tee.bytes} bytes, not kept]`, truncated: false, bytes: tee.bytes, content_type: type };
    }
    return this.cut(redactRawText(text, this.secrets), tee.bytes, type, !whole);
  }

  private cut(text: string, bytes: number, type: string | undefined, alreadyCut = false): CapturedBody {
    return cutBody(text, bytes, type, this.maxBytes, alreadyCut);
  }
}

function contentTypeOf(header: string | undefined): string | undefined {
  const type = header?.split(";")[0]?.trim().toLowerCase();
  return type ? type : undefined;
}
