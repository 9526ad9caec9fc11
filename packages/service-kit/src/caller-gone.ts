import { EventEmitter } from "node:events";

/**
 * Fires once when the caller of a request goes away, so the work done for it (an upstream call, a
 * retry's wait) stops. An EventEmitter rather than an AbortController: on Node 20 every
 * `addEventListener` on an AbortSignal left garbage for the old generation on each request, which in
 * inference meant a major collection every few seconds under load (figures in bench/README.md).
 * undici takes either kind of signal.
 */
export class CallerGone extends EventEmitter {
  private gone = false;
  private why: unknown;

  get aborted(): boolean {
    return this.gone;
  }

  get reason(): unknown {
    return this.why;
  }

  /** Marks the caller gone and tells every listener once; later calls do nothing. */
  abort(reason: unknown = new DOMException("The caller went away", "AbortError")): void {
    if (this.gone) return;
    this.gone = true;
    this.why = reason;
    this.emit("abort");
  }
}

/** What calls below the HTTP layer accept to stop early: a CallerGone, or any AbortSignal. */
export type CallSignal = AbortSignal | CallerGone;

/**
 * Calls `listener` once when `signal` fires (at once if it already has); returns the function that
 * removes it, to be called when the work is done either way.
 */
export function onAbort(signal: CallSignal, listener: () => void): () => void {
  if (signal.aborted) {
    listener();
    return noop;
  }
  if (signal instanceof CallerGone) {
    signal.once("abort", listener);
    return () => signal.removeListener("abort", listener);
  }
  signal.addEventListener("abort", listener, { once: true });
  return () => signal.removeEventListener("abort", listener);
}

function noop(): void {}

/** The part of an HTTP response `clientGone` watches. */
interface Answer {
  readonly writableFinished: boolean;
  /** Whether the response has closed already (its "close" event is past). */
  readonly closed: boolean;
  once(event: "close", listener: () => void): unknown;
}

/**
 * Fires when the client goes away before the answer is complete: the work for it is cancelled. A
 * client that left before this is asked (while its body was read, say) is gone from the start.
 */
export function clientGone(res: Answer): CallerGone {
  const gone = new CallerGone();
  if (res.closed && !res.writableFinished) {
    gone.abort();
    return gone;
  }
  res.once("close", () => {
    if (!res.writableFinished) gone.abort();
  });
  return gone;
}

/**
 * Writes a chunk of an answer, waiting when the client reads slower than we write: until the socket
 * drains, or the answer closes (a client that left must not hold the writer forever).
 */
export function writeOrWait(res: import("node:stream").Writable, chunk: string | Buffer): Promise<void> {
  if (res.write(chunk)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
