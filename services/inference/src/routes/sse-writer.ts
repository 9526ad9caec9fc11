import type { Response } from "express";

/**
 * Starts an SSE answer at once, so the client's first byte is not held back by us. `trailers` names
 * the trailer fields sent after the last event; they must be declared before the headers go out.
 */
export function startSse(res: Response, trailers: readonly string[] = []): void {
  res.status(200);
  if (trailers.length > 0) res.setHeader("trailer", trailers.join(", "));
  res.setHeader("content-type", "text/event-stream; charset=utf-8");
  res.setHeader("cache-control", "no-cache");
  res.setHeader("connection", "keep-alive");
  res.setHeader("x-accel-buffering", "no");
  res.flushHeaders();
}

/** Writes one event; waits for the socket to drain when the client reads slower than we write. */
export async function writeSse(res: Response, data: string, event?: string): Promise<void> {
  if (res.destroyed) return;
  const frame = event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`;
  if (!res.write(frame)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off("drain", done);
        res.off("close", done);
        resolve();
      };
      res.on("drain", done);
      res.on("close", done);
    });
  }
}

/** An AbortSignal that fires when the client goes away before the answer is complete. */
export function clientGone(res: Response): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
