import type { Response } from "express";
import { internalHeaders } from "@gw/contracts";
import { setOutcomeHeader } from "../usage/call-meter";

/**
 * Sends a JSON answer with the tokens the call used (when known) in the usage header, from which
 * ingress settles the token-limit reservation before removing it. Streams use `endSse` instead.
 */
export function sendJson(res: Response, body: unknown, totalTokens: number | undefined): void {
  if (totalTokens !== undefined) res.setHeader(internalHeaders.usageTokens, String(totalTokens));
  setOutcomeHeader(res);
  res.json(body);
}
