import { afterEach, describe, expect, it, vi } from "vitest";
import { Cleanup } from "./cleanup";

afterEach(() => {
  vi.restoreAllMocks();
  process.exitCode = undefined;
});

describe("Cleanup", () => {
  it("runs steps last-in first-out, once, however often it is asked", async () => {
    const order: string[] = [];
    const cleanup = new Cleanup();
    cleanup.add("upstream", async () => void order.push("upstream"));
    cleanup.add("mesh", async () => void order.push("mesh"));
    expect(cleanup.stopping).toBe(false);
    await Promise.all([cleanup.run(), cleanup.run()]);
    await cleanup.run();
    expect(order).toEqual(["mesh", "upstream"]);
    expect(cleanup.stopping).toBe(true);
  });

  it("keeps going after a failing step, and marks the exit code", async () => {
    vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const order: string[] = [];
    const cleanup = new Cleanup();
    cleanup.add("first", async () => void order.push("first"));
    cleanup.add("broken", async () => {
      throw new Error("boom");
    });
    await cleanup.run();
    expect(order).toEqual(["first"]);
    expect(process.exitCode).toBe(1);
  });

  it("also runs a step added while tearing down (a start that finished during an interrupt)", async () => {
    const order: string[] = [];
    const cleanup = new Cleanup();
    cleanup.add("slow", async () => {
      await new Promise((r) => setTimeout(r, 10));
      order.push("slow");
    });
    const done = cleanup.run();
    cleanup.add("late", async () => void order.push("late"));
    await done;
    expect(order).toEqual(["slow", "late"]);
  });
});
