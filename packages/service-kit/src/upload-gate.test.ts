import { describe, expect, it } from "vitest";
import { GatewayError } from "@gw/errors";
import { settledSoon } from "@gw/testkit";
import { UploadGate } from "./upload-gate";

const MB = 1024 * 1024;
const never = () => new AbortController().signal;

describe("when large uploads arrive at once", () => {
  it("then they are stored within the capacity, the others waiting in arrival order", async () => {
    const gate = new UploadGate(32 * MB);
    const first = await gate.acquire(25 * MB, never());
    const second = gate.acquire(25 * MB, never());
    const third = gate.acquire(5 * MB, never());
    // The small one fits beside the first, but does not pass the one that came before it.
    expect(await settledSoon(second)).toBe(false);
    expect(await settledSoon(third)).toBe(false);
    expect(gate.waiting).toBe(2);
    first();
    const releaseSecond = await second;
    const releaseThird = await third;
    expect(gate.heldBytes).toBe(30 * MB);
    releaseSecond();
    releaseSecond();
    releaseThird();
    expect(gate.heldBytes).toBe(0);
  });

  it("then a body larger than the whole capacity is stored alone, never refused for its size", async () => {
    const gate = new UploadGate(8 * MB);
    const release = await gate.acquire(20 * MB, never());
    const small = gate.acquire(2 * MB, never());
    expect(await settledSoon(small)).toBe(false);
    release();
    (await small)();
    expect(gate.heldBytes).toBe(0);
  });

  it("then one that waits too long is a retryable busy, and one whose client leaves stops waiting", async () => {
    const gate = new UploadGate(10 * MB);
    const holding = await gate.acquire(10 * MB, never());
    const err = await gate.acquire(5 * MB, never(), 20).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ code: "server_busy", status: 503 });
    const leaving = new AbortController();
    const left = gate.acquire(5 * MB, leaving.signal);
    const behind = gate.acquire(1 * MB, never());
    leaving.abort(new Error("gone"));
    await expect(left).rejects.toThrow("gone");
    expect(gate.waiting).toBe(1);
    holding();
    (await behind)();
    expect(gate.heldBytes).toBe(0);
    expect(gate.waiting).toBe(0);
  });

  it("then a waiter at the head that gives up lets the ones behind it through at once", async () => {
    const gate = new UploadGate(10 * MB);
    const holding = await gate.acquire(6 * MB, never());
    const leaving = new AbortController();
    const head = gate.acquire(8 * MB, leaving.signal);
    const timingOut = gate.acquire(7 * MB, never(), 20);
    const small = gate.acquire(2 * MB, never());
    // The small one would fit now, but not before those that came first.
    expect(await settledSoon(small)).toBe(false);
    leaving.abort(new Error("gone"));
    await expect(head).rejects.toThrow("gone");
    await expect(timingOut).rejects.toMatchObject({ code: "server_busy" });
    (await small)();
    holding();
    expect(gate.heldBytes).toBe(0);
    // A client already gone is not queued at all.
    const gone = new AbortController();
    gone.abort(new Error("left"));
    await expect(gate.acquire(1 * MB, gone.signal)).rejects.toThrow("left");
    expect(gate.waiting).toBe(0);
  });
});
