interface Waiting<T, R> {
  item: T;
  resolve(result: R): void;
  reject(err: unknown): void;
}

/**
 * Runs calls that arrive together as one write: items gather until the current turn of the event
 * loop ends (or while the writes allowed at once are busy), then one `write` takes them all and
 * answers each. A failed write fails every call in it, as each alone would have failed. With one
 * call at a time this costs a turn of the loop; with many, one statement and round trip instead of
 * one each (a Postgres group commit, as the usage ledger batches its records). With `retryAlone`
 * off, a failed write fails its calls without writing each again: for writes that a retry could
 * repeat (a bus message whose ack was lost, sent again under another id).
 */
export interface GroupCommitOptions {
  /** The most calls one write takes (200). */
  maxItems?: number;
  /** Writes at once; calls arriving meanwhile wait for one to end (2). */
  maxConcurrentWrites?: number;
  /** Whether the calls of a failed write are each written again alone (true). */
  retryAlone?: boolean;
}

export class GroupCommit<T, R> {
  private waiting: Waiting<T, R>[] = [];
  private scheduled = false;
  private writing = 0;
  private readonly maxItems: number;
  private readonly maxConcurrentWrites: number;
  private readonly retryAlone: boolean;

  constructor(
    /** Answers in the order of `items`. */
    private readonly write: (items: T[]) => Promise<R[]>,
    { maxItems = 200, maxConcurrentWrites = 2, retryAlone = true }: GroupCommitOptions = {},
  ) {
    this.maxItems = maxItems;
    this.maxConcurrentWrites = maxConcurrentWrites;
    this.retryAlone = retryAlone;
  }

  run(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    });
  }

  private flush(): void {
    while (this.writing < this.maxConcurrentWrites && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.maxItems);
      this.writing++;
      this.write(batch.map((w) => w.item))
        .then(
          (results) => {
            for (const [i, w] of batch.entries()) w.resolve(results[i] as R);
          },
          (err: unknown) => {
            if (batch.length === 1 || !this.retryAlone) for (const w of batch) w.reject(err);
            else for (const w of batch) this.write([w.item]).then((results) => w.resolve(results[0] as R), w.reject);
          },
        )
        .finally(() => {
          this.writing--;
          this.flush();
        });
    }
  }
}
