export interface BatcherOptions<T> {
  /** A batch is written as soon as it has this many items… */
  maxItems: number;
  /** …or this long after its first item arrived, whichever comes first… */
  maxWaitMs: number;
  /**
   * …or at once when it holds this many and no batch is being written (default: maxItems). Waiting
   * for more pays when they will come soon; a batch that is already large and would go alone
   * anyway costs a second wake-up of the process for nothing.
   */
  enoughItems?: number;
  /** Batches being written at once; more wait (and fill up) meanwhile. */
  maxConcurrentWrites: number;
  /**
   * Writes a batch: resolves with one entry per item, null for written and an error for an item
   * refused on its own; a rejection fails the whole batch.
   */
  write(items: T[]): Promise<(Error | null)[]>;
}

/** Items handed over together (one bus message's records): settled once, when all are written. */
interface Group {
  unwritten: number;
  failed: boolean;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Gathers items handed over a group at a time (one group per bus message) into batches, writes each
 * batch with one call, and settles each group's promise once every batch carrying its items is
 * written: the messages of a batch ack together after its commit, or are redelivered when it fails.
 * A group can straddle two batches; it fails if either does.
 */
export class Batcher<T> {
  /** Items waiting for a batch, each beside its group (two arrays: no object per item). */
  private items: T[] = [];
  private groups: Group[] = [];
  private timer: NodeJS.Timeout | undefined;
  private due = false;
  private writing = 0;
  private readonly idle = new Set<() => void>();

  constructor(private readonly options: BatcherOptions<T>) {}

  add(items: readonly T[]): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const group: Group = { unwritten: items.length, failed: false, resolve, reject };
      for (const item of items) {
        this.items.push(item);
        this.groups.push(group);
      }
      this.kick();
    });
  }

  /** Writes everything waiting now, and resolves once no batch is being written. */
  async drain(): Promise<void> {
    this.due = true;
    this.kick();
    while (this.writing > 0 || this.items.length > 0) {
      await new Promise<void>((resolve) => this.idle.add(resolve));
      this.due = true;
      this.kick();
    }
  }

  private kick(): void {
    const { maxItems, maxConcurrentWrites } = this.options;
    const enough = this.options.enoughItems ?? maxItems;
    while (
      this.writing < maxConcurrentWrites &&
      this.items.length > 0 &&
      (this.due || this.items.length >= maxItems || (this.writing === 0 && this.items.length >= enough))
    ) {
      const items = this.items.splice(0, maxItems);
      const groups = this.groups.splice(0, maxItems);
      this.writing += 1;
      void this.run(items, groups).finally(() => {
        this.writing -= 1;
        this.kick();
        if (this.writing === 0) this.wakeIdle();
      });
    }
    if (this.items.length === 0) {
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

  private async run(items: T[], groups: Group[]): Promise<void> {
    let outcomes: (Error | null)[];
    try {
      outcomes = await this.options.write(items);
    } catch (err) {
      for (const group of groups) fail(group, err);
      return;
    }
    groups.forEach((group, i) => {
      const error = outcomes[i];
      if (error) fail(group, error);
      else if (--group.unwritten === 0 && !group.failed) group.resolve();
    });
  }
}

function fail(group: Group, err: unknown): void {
  if (group.failed) return;
  group.failed = true;
  group.reject(err);
}
