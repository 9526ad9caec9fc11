import type { TokenUsage, UsageUnits } from "@gw/contracts";
import { type PricedItem, type PricedLine, type PricedUnit, pricedItems } from "./types";
import { divRoundHalfUp, formatPicoUsd, formatUsd, parseDecimal } from "./usd";

/** A price table: picodollars (1e-12 USD) per `unitOf[item]`. A missing item is not billed. */
export type Rates = Partial<Record<PricedItem, bigint>>;

/** Each item's billing unit, and how many of the counted things make one. */
export const unitOf: Record<PricedItem, { unit: PricedUnit; per: bigint }> = {
  input_tokens: { unit: "1M tokens", per: 1_000_000n },
  cached_input_tokens: { unit: "1M tokens", per: 1_000_000n },
  cache_write_tokens: { unit: "1M tokens", per: 1_000_000n },
  output_tokens: { unit: "1M tokens", per: 1_000_000n },
  images: { unit: "image", per: 1n },
  audio_seconds: { unit: "second", per: 1n },
  characters: { unit: "1K characters", per: 1000n },
  pages: { unit: "page", per: 1n },
  calls: { unit: "call", per: 1n },
  credits: { unit: "credit", per: 1n },
};

/** True when the request reported nothing at all: no token count and no unit (a refusal). */
export function isEmptyUsage(usage: TokenUsage, units: UsageUnits): boolean {
  for (const name in usage) if (usage[name as keyof TokenUsage] !== undefined) return false;
  for (const name in units) if (units[name as keyof UsageUnits] !== undefined) return false;
  return true;
}

function checkCounts(counts: Readonly<Record<string, number | undefined>>): void {
  for (const name in counts) {
    const value = counts[name];
    if (value !== undefined && !(Number.isFinite(value) && value >= 0)) throw new RangeError(`${name} is not a finite non-negative number: ${value}`);
  }
}

/**
 * How many of each item to bill. Input tokens are billed net of cache reads and writes (which
 * `input_tokens` includes), never below zero if a provider's counts disagree. A request that used
 * anything but reported no `calls` is one call, so a per-call price applies to every call that
 * reached a provider and to no refusal. Throws a RangeError on a count that is not a finite
 * non-negative number (the contracts' schemas refuse those; a caller that skipped them gets no guess).
 */
export function billedQuantities(usage: TokenUsage, units: UsageUnits): Record<PricedItem, number> {
  checkCounts(usage);
  checkCounts(units);
  const cached = usage.cached_input_tokens ?? 0;
  const cacheWrite = usage.cache_write_tokens ?? 0;
  return {
    input_tokens: Math.max(0, (usage.input_tokens ?? 0) - cached - cacheWrite),
    cached_input_tokens: cached,
    cache_write_tokens: cacheWrite,
    output_tokens: usage.output_tokens ?? 0,
    images: units.images ?? 0,
    audio_seconds: units.audio_seconds ?? 0,
    characters: units.characters ?? 0,
    pages: units.pages ?? 0,
    calls: units.calls ?? (isEmptyUsage(usage, units) ? 0 : 1),
    credits: units.credits ?? 0,
  };
}

/** Cache reads and writes fall back to the input price when the table has none for them. */
function rateFor(rates: Rates, item: PricedItem): bigint | undefined {
  const own = rates[item];
  if (own !== undefined) return own;
  return item === "cached_input_tokens" || item === "cache_write_tokens" ? rates.input_tokens : undefined;
}

// A sheet's few rates are written out once each, not once per line billed.
const rateTexts = new Map<bigint, string>();

function unitPriceText(price: bigint): string {
  let text = rateTexts.get(price);
  if (text === undefined) {
    text = formatUsd(price);
    if (rateTexts.size >= 10_000) rateTexts.clear();
    rateTexts.set(price, text);
  }
  return text;
}

/** One item a sheet prices, as the doubles path bills it. */
interface DoubleRate {
  item: PricedItem;
  /**
   * The price of one counted thing (a token, an image) in whole picodollars, where the rate divides
   * evenly (any price per million tokens with six decimals or fewer): such a line is an exact product
   * with nothing to round, held in a double while it stays below 2^53. Undefined otherwise.
   */
  perUnit: number | undefined;
  unit: PricedUnit;
  unitPrice: string;
}

/**
 * The items a sheet prices, in `pricedItems`' order, made once per sheet: a request then visits the
 * two or three a sheet has, not all ten with a lookup and a fallback each.
 */
const doubleRates = new WeakMap<Rates, DoubleRate[]>();

function doubleRatesOf(rates: Rates): DoubleRate[] {
  let made = doubleRates.get(rates);
  if (!made) {
    made = [];
    for (const item of pricedItems) {
      const price = rateFor(rates, item);
      if (price === undefined) continue;
      const { unit, per } = unitOf[item];
      const perUnit = price % per === 0n && price / per <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(price / per) : undefined;
      made.push({ item, perUnit, unit, unitPrice: unitPriceText(price) });
    }
    doubleRates.set(rates, made);
  }
  return made;
}

/**
 * Bills a request: one line per item with a non-zero quantity and a price, each amount rounded half
 * up to the picodollar once, and the cost the exact sum of the lines (as 12-decimal USD text).
 */
export function bill(rates: Rates, usage: TokenUsage, units: UsageUnits): { costUsd: string; lines: PricedLine[] } {
  const quantities = billedQuantities(usage, units);
  return billInDoubles(rates, quantities) ?? billExactly(rates, quantities);
}

/**
 * The common case without BigInt: whole counts at rates that divide evenly, each product and the
 * sum exact integers below 2^53. Undefined when any line is not such a case (the exact path bills it).
 */
function billInDoubles(rates: Rates, quantities: Record<PricedItem, number>): { costUsd: string; lines: PricedLine[] } | undefined {
  const lines: PricedLine[] = [];
  let cost = 0;
  for (const rate of doubleRatesOf(rates)) {
    const quantity = quantities[rate.item];
    if (quantity === 0) continue;
    const amount = rate.perUnit === undefined ? Number.NaN : quantity * rate.perUnit;
    if (!Number.isSafeInteger(quantity) || !Number.isSafeInteger(amount)) return undefined;
    cost += amount;
    lines.push({ item: rate.item, units: quantity, unit: rate.unit, unit_price_usd: rate.unitPrice, amount_usd: formatPicoUsd(amount) });
  }
  return Number.isSafeInteger(cost) ? { costUsd: formatPicoUsd(cost), lines } : undefined;
}

function billExactly(rates: Rates, quantities: Record<PricedItem, number>): { costUsd: string; lines: PricedLine[] } {
  const lines: PricedLine[] = [];
  let cost = 0n;
  for (const item of pricedItems) {
    const quantity = quantities[item];
    const price = quantity === 0 ? undefined : rateFor(rates, item);
    if (price === undefined) continue;
    // A whole count (tokens, images, pages: nearly every line) is its own digits; only a fraction
    // (audio seconds) goes through the decimal reader.
    const exact = Number.isSafeInteger(quantity) ? { digits: BigInt(quantity), scale: 0 } : parseDecimal(quantity);
    if (exact.digits === 0n) continue;
    const { unit, per } = unitOf[item];
    const amount = divRoundHalfUp(exact.digits * price, exact.scale === 0 ? per : per * 10n ** BigInt(exact.scale));
    cost += amount;
    lines.push({ item, units: quantity, unit, unit_price_usd: unitPriceText(price), amount_usd: formatUsd(amount) });
  }
  return { costUsd: formatUsd(cost), lines };
}
