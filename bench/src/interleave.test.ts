import { describe, expect, it } from "vitest";
import { interleaveBlocks } from "./interleave";

describe("interleaveBlocks", () => {
  it("alternates the paths in blocks, reversing the order every other round (A B B A A B …)", () => {
    const blocks = interleaveBlocks(["direct", "gateway"], 400, 100);
    expect(blocks.map((b) => b.path)).toEqual(["direct", "gateway", "gateway", "direct", "direct", "gateway", "gateway", "direct"]);
    expect(blocks.every((b) => b.count === 100)).toBe(true);
  });

  it("gives each path exactly its request count, the last round short when it does not divide", () => {
    const blocks = interleaveBlocks(["direct", "gateway"], 250, 100);
    expect(blocks).toEqual([
      { path: "direct", count: 100 },
      { path: "gateway", count: 100 },
      { path: "gateway", count: 100 },
      { path: "direct", count: 100 },
      { path: "direct", count: 50 },
      { path: "gateway", count: 50 },
    ]);
    const total = (p: string) => blocks.filter((b) => b.path === p).reduce((n, b) => n + b.count, 0);
    expect([total("direct"), total("gateway")]).toEqual([250, 250]);
  });

  it("puts each path first in half of the rounds, so neither always follows the other", () => {
    const blocks = interleaveBlocks(["a", "b"], 2000, 100);
    const firsts = blocks.filter((_, i) => i % 2 === 0).map((b) => b.path);
    expect(firsts.filter((p) => p === "a")).toHaveLength(10);
    expect(firsts.filter((p) => p === "b")).toHaveLength(10);
  });

  it("handles one round, no requests, and rejects a useless block size", () => {
    expect(interleaveBlocks(["a", "b"], 30, 100)).toEqual([{ path: "a", count: 30 }, { path: "b", count: 30 }]);
    expect(interleaveBlocks(["a", "b"], 0, 100)).toEqual([]);
    expect(() => interleaveBlocks(["a", "b"], 10, 0)).toThrow(/block size/);
  });
});
