import type { Response } from "express";
import { internalHeaders } from "@gw/contracts";
import { setOutcomeHeader } from "../usage/call-meter";

/**
 * Sends a JSON answer with the tokens the call used (when known), from which ingress settles the
 * token-limit reservation before removing the internal headers: in the outcome header of a metered
 * call (one header for ingress to parse on every answer, not two), else in the usage header. Streams
 * use `endSse` instead.
 */
export function sendJson(res: Response, body: unknown, totalTokens: number | undefined): void {
  if (!setOutcomeHeader(res, totalTokens) && totalTokens !== undefined) res.setHeader(internalHeaders.usageTokens, String(totalTokens));
  res.json(body);
}
