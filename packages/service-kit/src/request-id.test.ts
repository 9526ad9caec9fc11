import { describe, expect, it } from "vitest";
import { newRequestId } from "./request-id";

describe("newRequestId", () => {
  it("when ids are made, then each is req_ and 32 hex digits, and none repeats", () => {
    const ids = Array.from({ length: 10_000 }, () => newRequestId());
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("when an id is made, then its first 12 digits are the time it was made, in milliseconds", () => {
    const before = Date.now();
    const id = newRequestId();
    const after = Date.now();
    const at = Number.parseInt(id.slice(4, 16), 16);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(after);
  });

  it("when ids are made in different milliseconds, then they sort in the order they were made, whatever their random part", () => {
    const times = [0, 1, 255, 256, 4095, 4096, 1_700_000_000_000, 1_700_000_000_001, 2 ** 47, 2 ** 48 - 1];
    const ids = times.map((t) => newRequestId(t));
    expect([...ids].sort()).toEqual(ids);
    expect(ids.map((id) => Number.parseInt(id.slice(4, 16), 16))).toEqual(times);
  });
});
