import { afterEach, describe, expect, it, vi } from "vitest";
import { abortReads, ApiError, get, post } from "./api";

/** A fetch that answers only when told to, and fails as the browser's does once its signal aborts. */
function heldFetch() {
  const calls: Array<{ method: string; signal: AbortSignal | undefined; answer: () => void }> = [];
  const fetch = vi.fn((_url: string, init: RequestInit) => {
    return new Promise<Response>((resolve, reject) => {
      const signal = init.signal ?? undefined;
      signal?.addEventListener("abort", () => reject(new DOMException("The operation was aborted.", "AbortError")));
      calls.push({ method: String(init.method), signal, answer: () => resolve(Response.json({ ok: true })) });
    });
  });
  vi.stubGlobal("fetch", fetch);
  return calls;
}

afterEach(() => vi.unstubAllGlobals());

describe("abortReads", () => {
  it("when reads are in flight, then they are dropped, while a change in flight and later reads go ahead", async () => {
    const calls = heldFetch();
    const read = get("/workspaces/ws_1/usage");
    const change = post("/sign-out");
    abortReads();
    const later = get("/session");

    await expect(read).rejects.toMatchObject({ name: "AbortError" });
    expect(calls[0]?.signal?.aborted).toBe(true);
    // Not turned into "could not be reached": the page asked for it to stop.
    await expect(read).rejects.not.toBeInstanceOf(ApiError);

    expect(calls[1]?.signal).toBeUndefined();
    expect(calls[2]?.signal?.aborted).toBe(false);
    calls[1]?.answer();
    calls[2]?.answer();
    await expect(change).resolves.toEqual({ ok: true });
    await expect(later).resolves.toEqual({ ok: true });
  });

  it("when a read fails on its own, then it is still reported as the console out of reach", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(() => Promise.reject(new TypeError("Failed to fetch"))),
    );
    await expect(get("/session")).rejects.toMatchObject({ status: 0, message: expect.stringContaining("could not be reached") });
  });
});
