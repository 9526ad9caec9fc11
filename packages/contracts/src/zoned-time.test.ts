import { describe, expect, it } from "vitest";
import { canonicalZone, formatInZone, instantOf, monthOf, monthRange, offsetMinutes, wholeHourOffsets } from "./zoned-time";

describe("when instants are placed in a time zone", () => {
  it("then offsets, wall times and their ISO text follow the zone", () => {
    const at = Date.UTC(2025, 0, 1, 14, 30);
    expect(offsetMinutes("Asia/Tokyo", at)).toBe(540);
    expect(offsetMinutes("Asia/Kolkata", at)).toBe(330);
    expect(offsetMinutes("America/New_York", at)).toBe(-300);
    expect(offsetMinutes("UTC", at)).toBe(0);
    expect(formatInZone(at, "Asia/Tokyo")).toBe("2025-01-01T23:30:00+09:00");
    expect(formatInZone(at, "America/New_York")).toBe("2025-01-01T09:30:00-05:00");
    expect(formatInZone(at, "UTC")).toBe("2025-01-01T14:30:00Z");
    expect(instantOf({ year: 2025, month: 1, day: 2 }, "Asia/Tokyo")).toBe(Date.UTC(2025, 0, 1, 15));
  });

  it("then a month's range is its first midnight to the next one's, across DST and year ends", () => {
    expect(monthRange("2025-12", "UTC")).toEqual({ from: Date.UTC(2025, 11, 1), to: Date.UTC(2026, 0, 1) });
    expect(monthRange("2025-03", "Europe/Paris")).toEqual({ from: Date.UTC(2025, 1, 28, 23), to: Date.UTC(2025, 2, 31, 22) });
    expect(monthOf(Date.UTC(2025, 0, 31, 15, 30), "Asia/Tokyo")).toBe("2025-02");
    expect(monthOf(Date.UTC(2025, 0, 31, 14, 30), "Asia/Tokyo")).toBe("2025-01");
  });

  it("then only zones whose offset stays on whole hours can be answered from hourly roll-ups", () => {
    const from = Date.UTC(2025, 0, 1);
    const to = Date.UTC(2025, 11, 31);
    expect(wholeHourOffsets("UTC", from, to)).toBe(true);
    expect(wholeHourOffsets("Europe/Paris", from, to)).toBe(true);
    expect(wholeHourOffsets("Asia/Kolkata", from, to)).toBe(false);
    // Lord Howe Island is 10:30 ahead in winter, 11 in summer (daylight saving moves it by half an hour).
    expect(wholeHourOffsets("Australia/Lord_Howe", Date.UTC(2025, 11, 1), Date.UTC(2026, 1, 1))).toBe(true);
    expect(wholeHourOffsets("Australia/Lord_Howe", from, to)).toBe(false);
  });

  it("then zone names are checked and made canonical", () => {
    expect(canonicalZone("Asia/Tokyo")).toBe("Asia/Tokyo");
    expect(canonicalZone("Mars/Olympus")).toBeUndefined();
    expect(canonicalZone("")).toBeUndefined();
  });
});
