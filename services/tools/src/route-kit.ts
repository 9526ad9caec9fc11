import type { RequestHandler, Response } from "express";
import { formatCallOutcome, internalHeaders, type CallOutcome, type ToolName } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { sendError } from "@gw/service-kit";
export { clientGone, refuseCredentials } from "@gw/service-kit";
import type { GatewayConfig } from "@gw/config";
import type { Dispatcher } from "undici";
import type { RetryPolicy } from "./upstream/retry";

/** What every tool route needs. */
export interface ToolRouteDeps {
  gateway: GatewayConfig;
  secrets: Record<string, string | undefined>;
  agent: Dispatcher;
  bodyLimit: string;
  retry?: RetryPolicy;
}

/**
 * Sends a provider answer. As a last guard, should the provider ever echo the gateway's credential
 * anywhere in it (a pagination link, an echoed parameter), it is masked before it leaves.
 */
export function sendToolAnswer(res: Response, answer: unknown, credential: string): void {
  let text = JSON.stringify(answer);
  if (credential.length >= 8 && text.includes(credential)) text = text.split(credential).join("[redacted]");
  res.type("application/json").send(text);
}

/**
 * Answers a provider failure. Those the operator must act on (our credential refused, the account's
 * quota spent, the provider down or slow) are logged; the caller's own mistakes are not.
 */
export function sendToolFailure(res: Response, path: string, tool: ToolName, error: GatewayError): void {
  if (error.status >= 500 || error.type === "insufficient_quota") {
    res.locals.log.warn({ tool, code: error.code, status: error.status, message: error.message }, "tool provider call failed");
  }
  sendError(res, error, path);
}

/**
 * Tells ingress, for the usage record, which tool provider the call went to, how long it took and,
 * when it succeeded, that it was one billable call (ingress removes the header).
 */
export function setToolOutcome(res: Response, tool: ToolName, startedAt: number, ok: boolean): void {
  const outcome: CallOutcome = { provider: tool, attempts: 1, upstream_ms: Math.round((performance.now() - startedAt) * 1000) / 1000 };
  if (ok) outcome.units = { calls: 1 };
  res.setHeader(internalHeaders.outcome, formatCallOutcome(outcome));
}

/** A known tool path called with another method: 405 naming the one it takes. */
export function onlyMethod(method: "GET" | "POST"): RequestHandler {
  return (req, res) => {
    res.setHeader("allow", method);
    throw new GatewayError("method_not_allowed", `${req.path} takes ${method}, not ${req.method}`);
  };
}
