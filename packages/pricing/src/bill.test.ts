import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bill, type Rates, unitOf } from "./bill";
import { formatUsd } from "./usd";

/** The bill by definition, in BigInt: each line units × price / per rounded half up, the cost their sum. */
function reference(rates: Rates, quantities: Record<"input_tokens" | "output_tokens" | "images", number>) {
  const lines = [];
  let cost = 0n;
  for (const item of ["input_tokens", "output_tokens", "images"] as const) {
    const price = rates[item];
    const quantity = quantities[item];
    if (price === undefined || quantity === 0) continue;
    const per = unitOf[item].per;
    const amount = (2n * BigInt(quantity) * price + per) / (2n * per);
    cost += amount;
    lines.push({ item, units: quantity, amount_usd: formatUsd(amount) });
  }
  return { costUsd: formatUsd(cost), lines };
}

describe("bill", () => {
  // Per million tokens: whole picodollars a token (the common case, billed in doubles) or not
  // (a price with more than six decimals, billed in BigInt); counts up to past 2^53 a line.
  const perMillion = fc.oneof(
    fc.integer({ min: 0, max: 100_000_000 }).map((picoPerToken) => BigInt(picoPerToken) * 1_000_000n),
    fc.bigInt({ min: 0n, max: 10n ** 17n }),
  );
  const count = fc.oneof(fc.integer({ min: 0, max: 10_000_000 }), fc.maxSafeNat());

  it("when any rates bill any whole counts, then every line and the cost are the exact amounts, whichever way they were computed", () => {
    fc.assert(
      fc.property(
        perMillion,
        perMillion,
        fc.bigInt({ min: 0n, max: 10n ** 13n }),
        count,
        count,
        fc.nat(1000),
        (input, output, image, inTokens, outTokens, images) => {
          const rates: Rates = { input_tokens: input, output_tokens: output, images: image };
          const billed = bill(rates, { input_tokens: inTokens, output_tokens: outTokens }, { images });
          const expected = reference(rates, { input_tokens: inTokens, output_tokens: outTokens, images });
          expect(billed.costUsd).toBe(expected.costUsd);
          expect(billed.lines.map(({ item, units, amount_usd }) => ({ item, units, amount_usd }))).toEqual(expected.lines);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("when each line fits a double but their sum passes 2^53 picodollars, then the cost is still exact", () => {
    // 5e15 + 4,500,001,004,500,001 picodollars: an odd sum above 2^53, which no double holds.
    const billed = bill(
      { input_tokens: 1_000_000_000_000_000n, output_tokens: 1_000_000_001_000_000n },
      { input_tokens: 5_000_000, output_tokens: 4_500_001 },
      {},
    );
    expect(billed.lines.map((l) => l.amount_usd)).toEqual(["5000.000000000000", "4500.001004500001"]);
    expect(billed.costUsd).toBe("9500.001004500001");
  });
});
