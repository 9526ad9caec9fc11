import { createHash } from "node:crypto";
import type { ModelPrice, ToolPrice } from "@gw/config";
import type { Rates } from "./bill";
import type { PricedItem } from "./types";
import { toPicoUsd } from "./usd";

/** A price table and the version recorded with what it priced. */
export interface PriceSheet {
  rates: Rates;
  version: string;
}

const modelPriceItems: Record<keyof ModelPrice, PricedItem> = {
  input_per_mtok: "input_tokens",
  cached_input_per_mtok: "cached_input_tokens",
  cache_write_per_mtok: "cache_write_tokens",
  output_per_mtok: "output_tokens",
  per_image: "images",
  per_audio_second: "audio_seconds",
  per_1k_chars: "characters",
  per_page: "pages",
  per_call: "calls",
};

const toolPriceItems: Record<keyof ToolPrice, PricedItem> = { per_call: "calls", per_credit: "credits" };

/**
 * `config:` and the first 12 hex digits of the SHA-256 of the price object in a canonical form
 * (fields sorted, values as decimals), so the same price always has the same version and any edit
 * gives a new one.
 */
export function configPriceVersion(price: Readonly<Record<string, number | undefined>>): string {
  const canonical = Object.entries(price)
    .filter((entry): entry is [string, number] => entry[1] !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([field, value]) => [field, String(value)]);
  return `config:${createHash("sha256").update(JSON.stringify(canonical)).digest("hex").slice(0, 12)}`;
}

function sheet<P extends Readonly<Record<string, number | undefined>>>(price: P, items: Record<keyof P, PricedItem>): PriceSheet {
  const rates: Rates = {};
  for (const field of Object.keys(items) as (keyof P)[]) {
    const value = price[field];
    if (value !== undefined) rates[items[field]] = toPicoUsd(value);
  }
  return { rates, version: configPriceVersion(price) };
}

/** A model's config price as a table; the fields it lacks are not billed (cache fields fall back to input). */
export function modelPriceSheet(price: ModelPrice): PriceSheet {
  return sheet(price, modelPriceItems);
}

/** A tool provider's config price as a table. */
export function toolPriceSheet(price: ToolPrice): PriceSheet {
  return sheet(price, toolPriceItems);
}
