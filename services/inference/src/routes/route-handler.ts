import { pipeline } from "node:stream/promises";
import type { IRouter, RequestHandler, Response } from "express";
import type { Identity } from "@gw/contracts";
import type { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { type CallSignal, clientGone, routeLabel, sendError } from "@gw/service-kit";
import { type CallMeter, meterOf, setOutcomeHeader } from "../usage/call-meter";
import { sendJson } from "./json-answer";

/** What a model route needs besides its body: who calls, with what, and how to stop. */
export interface RouteContext {
  identity: Identity;
  /** The workspace's own provider credentials, opened. */
  credentials: Record<string, string> | undefined;
  requestId: string;
  log: Logger;
  signal: CallSignal;
  meter: CallMeter;
  anthropicBeta?: string;
}

/** The body: parsed JSON, or the raw bytes (a multipart form) with their content type. */
export interface RouteInput {
  body: unknown;
  contentType?: string;
}

/** A route's answer, before it is written anywhere. */
export type RouteAnswer =
  | { kind: "json"; body: unknown /** Tokens the call used, for ingress's token limit. */; totalTokens?: number }
  | { kind: "text"; contentType: string; text: string }
  | { kind: "bytes"; contentType: string; body: AsyncIterable<Uint8Array> }
  | { kind: "error"; error: GatewayError }
  /** A stream of events: only a live call carries one (async jobs refuse `stream: true`). */
  | { kind: "live"; send(res: Response): Promise<void> };

export type RouteHandler = (input: RouteInput, ctx: RouteContext) => Promise<RouteAnswer>;

/** The model routes' handlers by path (`/v1/chat/completions`): the live routes and the job worker run the same ones. */
export type RouteHandlers = Map<string, RouteHandler>;

/**
 * Mounts a handler as a live route and records it for the job worker, which calls it in-process:
 * both paths run one implementation, and a job's result is exactly the route's answer.
 */
export function serveRoute(router: IRouter, handlers: RouteHandlers, path: string, body: RequestHandler, handler: RouteHandler): void {
  handlers.set(path, handler);
  router.post(path, routeLabel(path), body, async (req, res) => {
    const signal = clientGone(res);
    const ctx: RouteContext = {
      identity: res.locals.identity!,
      credentials: res.locals.credentials,
      requestId: res.locals.requestId,
      log: res.locals.log,
      signal,
      meter: meterOf(res, path),
      anthropicBeta: req.get("anthropic-beta"),
    };
    await writeAnswer(res, await handler({ body: req.body, contentType: req.headers["content-type"] }, ctx), ctx);
  });
}

async function writeAnswer(res: Response, answer: RouteAnswer, ctx: RouteContext): Promise<void> {
  switch (answer.kind) {
    case "error":
      setOutcomeHeader(res);
      if (!ctx.signal.aborted) sendError(res, answer.error, res.req.path);
      return;
    case "json":
      sendJson(res, answer.body, answer.totalTokens);
      return;
    case "text":
      res.status(200).setHeader("content-type", answer.contentType);
      setOutcomeHeader(res);
      res.send(answer.text);
      return;
    case "bytes":
      res.status(200).setHeader("content-type", answer.contentType);
      setOutcomeHeader(res);
      try {
        // Bytes go out as they arrive; backpressure and a client leaving are handled by the pipeline.
        await pipeline(answer.body, res);
      } catch (err) {
        // The headers are out: all that is left is to cut the answer, which the pipeline did.
        if (!ctx.signal.aborted) ctx.log.warn({ err }, "a relayed byte stream from the upstream failed");
      }
      return;
    case "live":
      await answer.send(res);
  }
}
