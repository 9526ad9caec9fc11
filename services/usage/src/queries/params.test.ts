import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor, instantParam, logsParams, usageParams } from "./params";

const NOW = Date.UTC(2025, 0, 25, 12, 34);

describe("when usage parameters are read", () => {
  it("then the defaults are the 30 days up to the end of the current hour, in UTC, ungrouped", () => {
    const q = usageParams({}, NOW);
    expect(q).toMatchObject({ tz: "UTC", groupBy: [] });
    expect(new Date(q.to).toISOString()).toBe("2025-01-25T13:00:00.000Z");
    expect(q.to - q.from).toBe(30 * 24 * 3_600_000);
  });

  it("then group_by is a comma list, repeats dropped, order kept", () => {
    expect(usageParams({ group_by: "model, day,model" }, NOW).groupBy).toEqual(["model", "day"]);
  });

  it("then dates and wall times without an offset are read in the zone, and offsets are honoured", () => {
    expect(instantParam("from", "2025-01-02", "Asia/Tokyo")).toBe(Date.UTC(2025, 0, 1, 15));
    expect(instantParam("from", "2025-01-02T09:30", "Asia/Tokyo")).toBe(Date.UTC(2025, 0, 2, 0, 30));
    expect(instantParam("from", "2025-01-02T09:30:00+09:00", "UTC")).toBe(Date.UTC(2025, 0, 2, 0, 30));
    expect(instantParam("from", "2025-01-02T09:30:00.250-0130", "UTC")).toBe(Date.UTC(2025, 0, 2, 11, 0, 0, 250));
    expect(instantParam("from", "2025-01-02T00:00:00z", "UTC")).toBe(Date.UTC(2025, 0, 2));
    for (const bad of ["2025-1-2", "2025-02-29", "2025-01-02T25:00Z", "tomorrow", "1735776000000"]) {
      expect(() => instantParam("from", bad, "UTC"), bad).toThrow(/ISO 8601/);
    }
  });
});

describe("when logs parameters are read", () => {
  it("then status takes a code or a class, and limit defaults to 100", () => {
    expect(logsParams({ status: "5xx" }).status).toEqual({ min: 500, max: 599 });
    expect(logsParams({ status: "404" }).status).toEqual({ min: 404, max: 404 });
    expect(logsParams({}).limit).toBe(100);
  });

  it("then a cursor round-trips and anything else is refused", () => {
    const cursor = encodeCursor(Date.UTC(2025, 0, 1), "req_1");
    expect(decodeCursor(cursor)).toEqual({ startedAt: Date.UTC(2025, 0, 1), requestId: "req_1" });
    for (const bad of ["", "x", Buffer.from("[1]").toString("base64url"), Buffer.from('[1.5,"r"]').toString("base64url")]) {
      expect(() => decodeCursor(bad)).toThrow(/cursor/);
    }
  });
});
