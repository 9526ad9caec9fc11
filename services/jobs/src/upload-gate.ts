import type { NextFunction, RequestHandler, Response } from "express";
import { clientGone, type UploadGate } from "@gw/service-kit";

/** Bodies below this size pass without waiting: a chat job never queues behind an upload. */
export const LARGE_BODY_BYTES = 1024 * 1024;

/**
 * Holds a large body's declared bytes in `gate` from before it is read until its answer is done
 * (or its client has gone); a small one passes at once.
 */
export function gateLargeBodies(gate: UploadGate): RequestHandler {
  return (req, res, next) => {
    const bytes = Number(req.get("content-length") ?? 0);
    // A body over the limit is refused (413) without being stored: it need not wait, nor hold others.
    if (!(bytes >= LARGE_BODY_BYTES) || bytes > gate.capacityBytes) return next();
    holdThenNext(gate, bytes, res, next);
  };
}

/**
 * Holds the whole gate for an answer made of a stored large body (a worker reading back a request
 * the bus could not carry): its size is known only once read, and it is as large as the limit allows.
 */
export function gateLargeAnswers(gate: UploadGate): RequestHandler {
  return (_req, res, next) => holdThenNext(gate, gate.capacityBytes, res, next);
}

function holdThenNext(gate: UploadGate, bytes: number, res: Response, next: NextFunction): void {
  gate.acquire(bytes, clientGone(res)).then(
    (release) => {
      if (res.closed) return release();
      res.once("close", release);
      next();
    },
    (err: unknown) => {
      if (!res.closed) next(err);
    },
  );
}
