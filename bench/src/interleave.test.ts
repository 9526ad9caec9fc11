import { describe, expect, it } from "vitest";
import { interleaveBlocks, rotateBlocks } from "./interleave";

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
    expect(interleaveBlocks(["a", "b"], 30, 100)).toEqual([
      { path: "a", count: 30 },
      { path: "b", count: 30 },
    ]);
    expect(interleaveBlocks(["a", "b"], 0, 100)).toEqual([]);
    expect(() => interleaveBlocks(["a", "b"], 10, 0)).toThrow(/block size/);
  });
});

describe("rotateBlocks", () => {
  it("when there are three paths, then each round starts one path later and no path ever runs two blocks in a row", () => {
    const blocks = rotateBlocks(["d", "g", "b"], 600, 100);
    expect(blocks.map((b) => b.path).join("")).toBe("dgb" + "gbd" + "bdg" + "dgb" + "gbd" + "bdg");
    expect(blocks.every((block, i) => i === 0 || blocks[i - 1]?.path !== block.path)).toBe(true);
    // Every path takes every place equally often: none always runs after the same other path.
    for (const path of ["d", "g", "b"]) {
      const places = blocks.flatMap((b, i) => (b.path === path ? [i % 3] : []));
      expect(places.sort()).toEqual([0, 0, 1, 1, 2, 2]);
    }
  });

  it("when the count does not divide, then the last round is short and every path gets exactly its requests", () => {
    const blocks = rotateBlocks(["d", "g", "b"], 250, 100);
    expect(blocks).toEqual([
      { path: "d", count: 100 },
      { path: "g", count: 100 },
      { path: "b", count: 100 },
      { path: "g", count: 100 },
      { path: "b", count: 100 },
      { path: "d", count: 100 },
      { path: "b", count: 50 },
      { path: "d", count: 50 },
      { path: "g", count: 50 },
    ]);
  });

  it("when there are two paths, then the order is interleaveBlocks' own", () => {
    expect(rotateBlocks(["a", "b"], 450, 100)).toEqual(interleaveBlocks(["a", "b"], 450, 100));
    expect(() => rotateBlocks(["a", "b", "c"], 10, 0)).toThrow(/block size/);
  });
});
