import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Batcher } from "./batcher";

interface Gate {
  batches: number[][];
  release(): void;
  fail(err: Error): void;
}

/** A writer whose batches complete only when the test says so. */
function gatedWriter(): Gate & { write(items: number[]): Promise<(Error | null)[]> } {
  const pending: { resolve(v: (Error | null)[]): void; reject(e: unknown): void; items: number[] }[] = [];
  const gate = {
    batches: [] as number[][],
    write(items: number[]) {
      gate.batches.push(items);
      return new Promise<(Error | null)[]>((resolve, reject) => pending.push({ resolve, reject, items }));
    },
    release() {
      const next = pending.shift();
      next?.resolve(next.items.map(() => null));
    },
    fail(err: Error) {
      pending.shift()?.reject(err);
    },
  };
  return gate;
}

const settled = async (promises: Promise<void>[]) => {
  const states = promises.map(() => "pending");
  promises.forEach((p, i) => {
    p.then(
      () => {
        states[i] = "ok";
      },
      () => {
        states[i] = "failed";
      },
    );
  });
  await vi.advanceTimersByTimeAsync(0);
  return states;
};

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("when items are added in groups (one per bus message)", () => {
  it("then a group split across two batches settles once both are written, and fails if either fails", async () => {
    const writer = gatedWriter();
    const batcher = new Batcher<number>({ maxItems: 3, maxWaitMs: 50, maxConcurrentWrites: 2, write: writer.write });
    const first = batcher.add([1, 2]);
    const straddling = batcher.add([3, 4, 5]);
    const last = batcher.add([6]);
    expect(writer.batches).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    writer.release();
    expect(await settled([first, straddling, last])).toEqual(["ok", "pending", "pending"]);
    writer.release();
    expect(await settled([first, straddling, last])).toEqual(["ok", "ok", "ok"]);

    const again = batcher.add([7, 8, 9, 10]);
    await vi.advanceTimersByTimeAsync(50);
    expect(writer.batches.at(-1)).toEqual([10]);
    writer.release();
    writer.fail(new Error("db down"));
    await expect(again).rejects.toThrow("db down");
  });

  it("then an empty group is settled at once", async () => {
    const batcher = new Batcher<number>({ maxItems: 3, maxWaitMs: 50, maxConcurrentWrites: 1, write: async (items) => items.map(() => null) });
    await expect(batcher.add([])).resolves.toBeUndefined();
  });
});

describe("when items are added one at a time", () => {
  it("then a full batch is written at once, and its items resolve only after its write", async () => {
    const writer = gatedWriter();
    const batcher = new Batcher<number>({ maxItems: 3, maxWaitMs: 50, maxConcurrentWrites: 2, write: writer.write });
    const adds = [1, 2, 3, 4].map((n) => batcher.add([n]));
    expect(writer.batches).toEqual([[1, 2, 3]]);
    expect(await settled(adds)).toEqual(["pending", "pending", "pending", "pending"]);
    writer.release();
    expect(await settled(adds)).toEqual(["ok", "ok", "ok", "pending"]);
  });

  it("then a partial batch is written once the wait is over", async () => {
    const writer = gatedWriter();
    const batcher = new Batcher<number>({ maxItems: 100, maxWaitMs: 50, maxConcurrentWrites: 2, write: writer.write });
    const adds = [batcher.add([1]), batcher.add([2])];
    await vi.advanceTimersByTimeAsync(49);
    expect(writer.batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(writer.batches).toEqual([[1, 2]]);
    writer.release();
    expect(await settled(adds)).toEqual(["ok", "ok"]);
  });

  it("then enough items go at once while nothing is being written, and wait for more while a batch is", async () => {
    const writer = gatedWriter();
    const batcher = new Batcher<number>({ maxItems: 10, enoughItems: 3, maxWaitMs: 50, maxConcurrentWrites: 2, write: writer.write });
    const adds = [batcher.add([1, 2]), batcher.add([3])];
    expect(writer.batches).toEqual([[1, 2, 3]]);
    // One batch is being written: these wait for more, or for the wait to end.
    adds.push(batcher.add([4, 5, 6]), batcher.add([7]));
    expect(writer.batches).toEqual([[1, 2, 3]]);
    await vi.advanceTimersByTimeAsync(50);
    expect(writer.batches).toEqual([
      [1, 2, 3],
      [4, 5, 6, 7],
    ]);
    writer.release();
    writer.release();
    expect(await settled(adds)).toEqual(["ok", "ok", "ok", "ok"]);
  });

  it("then a failed write rejects every item of its batch, and only those", async () => {
    const writer = gatedWriter();
    const batcher = new Batcher<number>({ maxItems: 2, maxWaitMs: 50, maxConcurrentWrites: 2, write: writer.write });
    const adds = [1, 2, 3, 4].map((n) => batcher.add([n]));
    writer.fail(new Error("db down"));
    writer.release();
    expect(await settled(adds)).toEqual(["failed", "failed", "ok", "ok"]);
    await expect(adds[0]).rejects.toThrow("db down");
  });

  it("then an item refused on its own is rejected alone", async () => {
    const batcher = new Batcher<number>({
      maxItems: 3,
      maxWaitMs: 50,
      maxConcurrentWrites: 1,
      write: async (items) => items.map((n) => (n === 2 ? new Error("bad record") : null)),
    });
    const adds = [1, 2, 3].map((n) => batcher.add([n]));
    expect(await settled(adds)).toEqual(["ok", "failed", "ok"]);
  });

  it("then no more batches than allowed are written at once, and the waiting ones follow", async () => {
    const writer = gatedWriter();
    const batcher = new Batcher<number>({ maxItems: 2, maxWaitMs: 50, maxConcurrentWrites: 1, write: writer.write });
    const adds = [1, 2, 3, 4, 5].map((n) => batcher.add([n]));
    expect(writer.batches).toEqual([[1, 2]]);
    writer.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(writer.batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    const drained = batcher.drain();
    writer.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(writer.batches).toEqual([[1, 2], [3, 4], [5]]);
    writer.release();
    await drained;
    expect(await settled(adds)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
  });
});
