import { describe, expect, it } from "vitest";
import { addDecimal, decimalOf } from "./decimal";

describe("when amounts are added as decimals", () => {
  it("then the sum is exact where floats drift", () => {
    expect(0.1 + 0.2).not.toBe(0.3);
    expect(addDecimal("0.1", "0.2")).toBe("0.3");
    expect(addDecimal("0.000000000001", "1")).toBe("1.000000000001");
    expect(addDecimal("123456789012345678.5", "0.5")).toBe("123456789012345679");
    expect(addDecimal("1.50", "0")).toBe("1.5");
    expect(addDecimal("-1.25", "1.25")).toBe("0");
    expect(addDecimal("-2", "0.5")).toBe("-1.5");
  });

  it("then counts become decimal text without exponents, and garbage is refused", () => {
    expect(decimalOf(1234)).toBe("1234");
    expect(decimalOf(12.5)).toBe("12.5");
    expect(decimalOf(1e-7)).toBe("0.0000001");
    expect(decimalOf("0.000123450000")).toBe("0.00012345");
    expect(() => decimalOf("1e5")).toThrow(/not a decimal/);
    expect(() => decimalOf(Number.NaN)).toThrow(/finite/);
  });
});
