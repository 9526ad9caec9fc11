import { GatewayError } from "@gw/errors";
import { type CallSignal, onAbort } from "./caller-gone";

/** How long a large body may wait for room before it is refused as busy (retryable). */
const MAX_WAIT_MS = 15_000;

interface Waiter {
  bytes: number;
  grant(): void;
}

/**
 * Large bodies a process handles at once, by their bytes: jobs storing uploads, inference running
 * jobs whose requests were too large for the bus. Handling one costs many times its size in
 * transient memory (the body, its parsed form, its base64 and JSON text, a query's buffer), so a
 * few 25 MB uploads at once could run the process out of memory; past `capacityBytes` they wait
 * their turn in arrival order, and one that waits too long is a 503 `server_busy` (retryable). A
 * single body always fits when nothing else is held, so any body the limit allows can be handled.
 */
export class UploadGate {
  private held = 0;
  private readonly queue: Waiter[] = [];

  constructor(readonly capacityBytes: number) {}

  get heldBytes(): number {
    return this.held;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** Resolves with the release once `bytes` are granted; rejects after `maxWaitMs` (`Infinity`: never), or when `signal` aborts. */
  acquire(bytes: number, signal: CallSignal, maxWaitMs = MAX_WAIT_MS): Promise<() => void> {
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.held -= bytes;
      this.grantWaiting();
    };
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.queue.length === 0 && this.fits(bytes)) {
      this.held += bytes;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        bytes,
        grant: () => {
          cleanup();
          this.held += bytes;
          resolve(release);
        },
      };
      const giveUp = (err: unknown) => {
        cleanup();
        this.queue.splice(this.queue.indexOf(waiter), 1);
        // The one given up may have been what held the others back.
        this.grantWaiting();
        reject(err);
      };
      const timer = Number.isFinite(maxWaitMs) ? setTimeout(() => giveUp(busy()), maxWaitMs) : undefined;
      this.queue.push(waiter);
      const stopWatching = onAbort(signal, () => giveUp(signal.reason));
      const cleanup = () => {
        clearTimeout(timer);
        stopWatching();
      };
    });
  }

  private fits(bytes: number): boolean {
    return this.held === 0 || this.held + bytes <= this.capacityBytes;
  }

  private grantWaiting(): void {
    while (this.queue.length > 0 && this.fits(this.queue[0]!.bytes)) this.queue.shift()!.grant();
  }
}

function busy(): GatewayError {
  return new GatewayError("server_busy", "The gateway is storing too many large uploads at once; try again shortly", {
    headers: { "retry-after": "1" },
  });
}
