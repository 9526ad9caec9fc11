export interface BatcherOptions<T> {
  /** A batch is written as soon as it has this many items… */
  maxItems: number;
  /** …or this long after its first item arrived, whichever comes first. */
  maxWaitMs: number;
  /** Batches being written at once; more wait (and fill up) meanwhile. */
  maxConcurrentWrites: number;
  /**
   * Writes a batch: resolves with one entry per item, null for written and an error for an item
   * refused on its own; a rejection fails the whole batch.
   */
  write(items: T[]): Promise<(Error | null)[]>;
}

interface Waiting<T> {
  item: T;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Gathers items handed over one at a time (one per bus handler) into batches, writes each batch
 * with one call, and settles every item's promise with its batch's outcome: the handlers of a
 * batch ack together after its commit, or are all redelivered when it fails.
 */
export class Batcher<T> {
  private pending: Waiting<T>[] = [];
  private timer: NodeJS.Timeout | undefined;
  private due = false;
  private writing = 0;
  private readonly idle = new Set<() => void>();

  constructor(private readonly options: BatcherOptions<T>) {}

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.kick();
    });
  }

  /** Writes everything waiting now, and resolves once no batch is being written. */
  async drain(): Promise<void> {
    this.due = true;
    this.kick();
    while (this.writing > 0 || this.pending.length > 0) {
      await new Promise<void>((resolve) => this.idle.add(resolve));
      this.due = true;
      this.kick();
    }
  }

  private kick(): void {
    const { maxItems, maxConcurrentWrites } = this.options;
    while (this.writing < maxConcurrentWrites && this.pending.length > 0 && (this.due || this.pending.length >= maxItems)) {
      const batch = this.pending.splice(0, maxItems);
      this.writing += 1;
      void this.run(batch).finally(() => {
        this.writing -= 1;
        this.kick();
        if (this.writing === 0) this.wakeIdle();
      });
    }
    if (this.pending.length === 0) {
      this.due = false;
      clearTimeout(this.timer);
      this.timer = undefined;
    } else if (!this.timer && !this.due) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.due = true;
        this.kick();
      }, this.options.maxWaitMs);
    }
  }

  private wakeIdle(): void {
    const waiting = [...this.idle];
    this.idle.clear();
    for (const wake of waiting) wake();
  }

  private async run(batch: Waiting<T>[]): Promise<void> {
    try {
      const outcomes = await this.options.write(batch.map((w) => w.item));
      batch.forEach((waiting, i) => {
        const error = outcomes[i];
        if (error) waiting.reject(error);
        else waiting.resolve();
      });
    } catch (err) {
      for (const waiting of batch) waiting.reject(err);
    }
  }
}
