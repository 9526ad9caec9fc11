import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { addUsd, formatPicoUsd, formatUsd, parseDecimal, toPicoUsd } from "./usd";

describe("parseDecimal", () => {
  it("when given plain, fractional and exponent forms, then it reads them exactly", () => {
    expect(parseDecimal("12")).toEqual({ digits: 12n, scale: 0 });
    expect(parseDecimal("0.15")).toEqual({ digits: 15n, scale: 2 });
    expect(parseDecimal(0.15)).toEqual({ digits: 15n, scale: 2 });
    expect(parseDecimal(1.5e-7)).toEqual({ digits: 15n, scale: 8 });
    expect(parseDecimal("2.5E+3")).toEqual({ digits: 2500n, scale: 0 });
    expect(parseDecimal(1e21)).toEqual({ digits: 10n ** 21n, scale: 0 });
  });

  it("when given a negative, NaN, Infinity or text, then it throws a RangeError", () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, "-0.1", "abc", "", "1.2.3", "1e99999"]) {
      expect(() => parseDecimal(bad), String(bad)).toThrow(RangeError);
    }
  });
});

describe("formatUsd and toPicoUsd", () => {
  it("when formatting picodollars, then the string has exactly 12 decimal places", () => {
    expect(formatUsd(123_450_000n)).toBe("0.000123450000");
    expect(formatUsd(0n)).toBe("0.000000000000");
    expect(formatUsd(1n)).toBe("0.000000000001");
    expect(formatUsd(12_345_000_000_000_000n)).toBe("12345.000000000000");
  });

  it("when whole picodollars below 2^53 are written from a number, then the text is formatUsd's", () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: -1e6, max: 1e6 }), fc.maxSafeInteger(), fc.maxSafeNat()), (pico) => {
        expect(formatPicoUsd(pico)).toBe(formatUsd(BigInt(pico)));
      }),
      { numRuns: 2000 },
    );
    for (const edge of [0, 999_999_999_999, 1e12, 1e12 + 1, Number.MAX_SAFE_INTEGER]) expect(formatPicoUsd(edge)).toBe(formatUsd(BigInt(edge)));
    for (const bad of [0.5, 2 ** 53, Number.NaN]) expect(() => formatPicoUsd(bad), String(bad)).toThrow(RangeError);
  });

  it("when a USD amount has more than 12 decimals, then it is rounded half up at the 12th", () => {
    expect(toPicoUsd("0.0000000000005")).toBe(1n);
    expect(toPicoUsd("0.0000000000004999")).toBe(0n);
    expect(toPicoUsd(0.15)).toBe(150_000_000_000n);
  });
});

describe("addUsd", () => {
  it("when adding decimals of any scale, then the sum is exact, with at least 12 decimal places", () => {
    expect(addUsd("0.1", "0.2")).toBe("0.300000000000");
    expect(addUsd("0.000000000001", "0")).toBe("0.000000000001");
    expect(addUsd("1.00000000000000000001", "2")).toBe("3.00000000000000000001");
    expect(addUsd("99999999999999999999.5", "0.5")).toBe("100000000000000000000.000000000000");
  });

  it("when a tiny amount is added 1,000,000 times, then the total is exact (a float sum drifts)", () => {
    let total = "0";
    let float = 0;
    for (let i = 0; i < 1_000_000; i++) {
      total = addUsd(total, "0.000000000001");
      float += 0.000000000001;
    }
    expect(total).toBe("0.000001000000");
    expect(float).not.toBe(0.000001);
  });
});
