import { describe, expect, it } from "vitest";
import { BodyBudget } from "./body-budget";

describe("BodyBudget", () => {
  it("when reservations fill the budget, then the next is refused until one is released", () => {
    const budget = new BodyBudget(100);
    expect(budget.tryReserve(60)).toBe(true);
    expect(budget.tryReserve(40)).toBe(true);
    expect(budget.tryReserve(1)).toBe(false);
    budget.release(40);
    expect(budget.tryReserve(30)).toBe(true);
    expect(budget.heldBytes).toBe(90);
  });

  it("when one body is larger than the whole budget, then it never fits, even empty", () => {
    const budget = new BodyBudget(100);
    expect(budget.tryReserve(101)).toBe(false);
    expect(budget.heldBytes).toBe(0);
  });

  it("when more is released than held, then the budget does not go negative", () => {
    const budget = new BodyBudget(10);
    budget.release(5);
    expect(budget.heldBytes).toBe(0);
    expect(budget.tryReserve(10)).toBe(true);
    expect(budget.tryReserve(1)).toBe(false);
  });
});
