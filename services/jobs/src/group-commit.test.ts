import { describe, expect, it } from "vitest";
import { GroupCommit } from "./group-commit";

describe("when calls arrive together at a group commit", () => {
  it("then they share one write and each gets its own answer, in order", async () => {
    const writes: number[][] = [];
    const commit = new GroupCommit<number, string>(async (items) => {
      writes.push(items);
      return items.map((n) => `row ${n}`);
    });
    const answers = await Promise.all([1, 2, 3, 4].map((n) => commit.run(n)));
    expect(answers).toEqual(["row 1", "row 2", "row 3", "row 4"]);
    expect(writes).toEqual([[1, 2, 3, 4]]);
  });

  it("then a call made alone is written alone, and calls made while writes are busy wait for the next one", async () => {
    const writes: number[][] = [];
    let release: (() => void) | undefined;
    const commit = new GroupCommit<number, number>(
      async (items) => {
        writes.push(items);
        if (items[0] === 1) await new Promise<void>((r) => (release = r));
        return items;
      },
      { maxConcurrentWrites: 1 },
    );
    const first = commit.run(1);
    await new Promise((r) => setImmediate(r));
    const later = [2, 3].map((n) => commit.run(n));
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual([[1]]);
    release?.();
    expect(await Promise.all([first, ...later])).toEqual([1, 2, 3]);
    expect(writes).toEqual([[1], [2, 3]]);
  });

  it("then an item that cannot be written fails its own call only", async () => {
    const commit = new GroupCommit<number, number>(async (items) => {
      if (items.includes(13)) throw new Error("unlucky row");
      return items.map((n) => n * 2);
    });
    const settled = await Promise.allSettled([12, 13, 14].map((n) => commit.run(n)));
    expect(settled.map((s) => (s.status === "fulfilled" ? s.value : (s.reason as Error).message))).toEqual([24, "unlucky row", 28]);
  });

  it("then, without retries alone, a failed write fails every call in it and nothing is written again", async () => {
    const writes: number[][] = [];
    const commit = new GroupCommit<number, number>(
      async (items) => {
        writes.push(items);
        if (items.includes(13)) throw new Error("no ack");
        return items;
      },
      { retryAlone: false },
    );
    const settled = await Promise.allSettled([12, 13, 14].map((n) => commit.run(n)));
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(writes).toEqual([[12, 13, 14]]);
    expect(await commit.run(15)).toBe(15);
  });
});
