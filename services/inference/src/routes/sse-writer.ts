import type { Response } from "express";
import { internalHeaders } from "@gw/contracts";
import { writeOrWait } from "@gw/service-kit";
import { outcomeTrailer } from "../usage/call-meter";

/**
 * Starts an SSE answer at once, so the client's first byte is not held back by us. It announces the
 * usage trailer (`endSse`): a stream's usage is known only at its end, after the headers left, and
 * a trailer must be declared before they go out.
 */
export function startSse(res: Response): void {
  res.status(200);
  res.setHeader("trailer", `${internalHeaders.usageTokens}, ${internalHeaders.outcome}`);
  res.setHeader("content-type", "text/event-stream; charset=utf-8");
  res.setHeader("cache-control", "no-cache");
  res.setHeader("connection", "keep-alive");
  res.setHeader("x-accel-buffering", "no");
  res.flushHeaders();
}

/**
 * Ends an SSE answer, telling ingress the tokens the call used (when known) so it can settle the
 * token-limit reservation: in the outcome trailer of a metered call, else in the usage trailer.
 * Ingress removes the trailers before the answer reaches the client.
 */
export function endSse(res: Response, totalTokens: number | undefined): void {
  if (res.destroyed) return;
  const trailers = outcomeTrailer(res, totalTokens);
  if (totalTokens !== undefined && !(internalHeaders.outcome in trailers)) trailers[internalHeaders.usageTokens] = String(totalTokens);
  res.addTrailers(trailers);
  res.end();
}

/** Writes one event; waits for the socket to drain when the client reads slower than we write. */
export async function writeSse(res: Response, data: string, event?: string): Promise<void> {
  if (res.destroyed) return;
  const frame = event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`;
  await writeOrWait(res, frame);
}
