import type { NextFunction, RequestHandler, Response } from "express";
import type { UploadGate } from "@gw/service-kit";

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
  const gone = new AbortController();
  const onClose = () => gone.abort(new Error("the client went away while its body waited"));
  res.once("close", onClose);
  gate.acquire(bytes, gone.signal).then(
    (release) => {
      res.off("close", onClose);
      if (res.closed) return release();
      res.once("close", release);
      next();
    },
    (err: unknown) => {
      res.off("close", onClose);
      if (!res.closed) next(err);
    },
  );
}
