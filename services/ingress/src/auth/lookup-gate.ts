import { GatewayError } from "@gw/errors";

export interface LookupGateOptions {
  /** Store lookups running at once. */
  concurrency: number;
  /** Lookups waiting for a turn; past it a lookup is refused at once. */
  maxQueue: number;
  /** Longest wait for a turn, so a caller is answered even when the store is slow. */
  maxWaitMs: number;
}

interface Waiter {
  grant(): void;
  timer: NodeJS.Timeout;
}

/**
 * A small semaphore in front of the identity store: however many uncached keys arrive at once,
 * at most `concurrency` connections of the pool serve them, so known keys and the other users of
 * Postgres keep theirs. A caller that cannot get a turn soon gets a retryable 503.
 */
export class LookupGate {
  private active = 0;
  private readonly queue: Waiter[] = [];
  /** Most lookups running at once since start; tests read it. */
  peak = 0;

  constructor(private readonly options: LookupGateOptions) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  get inFlight(): number {
    return this.active;
  }

  get waiting(): number {
    return this.queue.length;
  }

  private acquire(): Promise<void> | void {
    if (this.active < this.options.concurrency) {
      this.take();
      return;
    }
    if (this.queue.length >= this.options.maxQueue) throw busy();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          clearTimeout(waiter.timer);
          this.take();
          resolve();
        },
        timer: setTimeout(() => {
          const at = this.queue.indexOf(waiter);
          if (at >= 0) this.queue.splice(at, 1);
          reject(busy());
        }, this.options.maxWaitMs).unref(),
      };
      this.queue.push(waiter);
    });
  }

  private take(): void {
    this.active++;
    if (this.active > this.peak) this.peak = this.active;
  }

  private release(): void {
    this.active--;
    this.queue.shift()?.grant();
  }
}

function busy(): GatewayError {
  return new GatewayError("upstream_unavailable", "Authentication is busy; please try again shortly", {
    headers: { "retry-after": "1" },
  });
}
