import { calcPrice, findProvider, type ModelPrice as LibraryPrice, type PriceCalculation } from "@pydantic/genai-prices";
import type { ProviderConfig, ProviderKind } from "@gw/config";
import type { Rates } from "./bill";
import type { PriceSheet } from "./config-price";
import type { PricedItem } from "./types";
import { divRoundHalfUp, parseDecimal, USD_DECIMALS } from "./usd";

/**
 * The installed @pydantic/genai-prices, whose price data ship inside the package: its version is the
 * data's version. Kept as a constant because the services run bundled, without the package's files;
 * a test fails when the installed package differs, so an upgrade cannot keep the old version.
 */
export const GENAI_PRICES_VERSION = "0.1.8";

/** Our model provider kinds → genai-prices provider ids (it has no Jina; tools are not models). */
export const libraryProviderIds: Readonly<Partial<Record<ProviderKind, string>>> = {
  openai: "openai",
  anthropic: "anthropic",
  cohere: "cohere",
  mistral: "mistral",
};

/**
 * The genai-prices provider a configured provider is priced as. Kind `openai` is any
 * OpenAI-compatible server, so its address picks the vendor when genai-prices knows it (Groq,
 * OpenRouter, Azure, Together, …); an address it does not know (a local server) is priced as OpenAI.
 */
export function libraryProviderId(provider: Pick<ProviderConfig, "kind" | "base_url">): string | undefined {
  const byKind = libraryProviderIds[provider.kind];
  if (byKind === undefined || provider.kind !== "openai") return byKind;
  return findProvider({ providerApiUrl: provider.base_url })?.id ?? byKind;
}

/** Library price keys we bill, and by how much to divide each to get our unit's price. */
const billedKeys: Readonly<Record<string, { item: PricedItem; divisor: bigint }>> = {
  input_mtok: { item: "input_tokens", divisor: 1n },
  cache_read_mtok: { item: "cached_input_tokens", divisor: 1n },
  cache_write_mtok: { item: "cache_write_tokens", divisor: 1n },
  output_mtok: { item: "output_tokens", divisor: 1n },
  audio_hours: { item: "audio_seconds", divisor: 3600n },
  input_document_kpages: { item: "pages", divisor: 1000n },
  input_mchars: { item: "characters", divisor: 1000n },
  requests_kcount: { item: "calls", divisor: 1000n },
};

/**
 * Library price keys for things our usage does not count, left out (docs/pricing.md): provider-side
 * tool calls, 1-hour cache writes (billed at the cache-write price), annotated OCR pages (billed as
 * pages), and the input/output split of audio time (all audio seconds at `audio_hours`, as the
 * library itself bills an undivided duration).
 */
const ignoredKeys = new Set([
  "web_searches_kcount",
  "storage_searches_kcount",
  "code_executions_kcount",
  "social_searches_kcount",
  "cache_write_1h_mtok",
  "cache_write_5m_mtok",
  "input_annotated_document_kpages",
  "input_audio_hours",
  "output_audio_hours",
]);

type LibraryValue = LibraryPrice[string];

/** The price that applies at `inputTokens` total input: the base, or the highest tier passed (as genai-prices does). */
function tierPrice(value: NonNullable<LibraryValue>, inputTokens: number): number {
  if (typeof value === "number") return value;
  let price = value.base;
  for (const tier of [...value.tiers].sort((a, b) => a.start - b.start)) if (inputTokens > tier.start) price = tier.price;
  return price;
}

/**
 * A library price as our table, or undefined when it has a key we cannot bill from our usage:
 * prices split by modality (audio, image, video tokens), rerank searches and the like would be
 * billed wrong from undivided counts, and a wrong price is worse than none.
 */
export function libraryRates(price: LibraryPrice, inputTokens: number): Rates | undefined {
  const rates: Rates = {};
  for (const [key, value] of Object.entries(price)) {
    if (value === undefined || ignoredKeys.has(key)) continue;
    const use = billedKeys[key];
    if (!use) return undefined;
    const exact = parseDecimal(tierPrice(value, inputTokens));
    rates[use.item] = divRoundHalfUp(exact.digits * 10n ** BigInt(USD_DECIMALS), 10n ** BigInt(exact.scale) * use.divisor);
  }
  return rates;
}

/** Resolutions kept per (provider, model); prices that change by date are looked up each time. */
const CACHE_LIMIT = 1000;

/** Prices from genai-prices' bundled data; it never fetches anything (we never call its updatePrices). */
export function createLibraryPrices() {
  const cache = new Map<string, PriceCalculation | null>();
  // A price without tiers gives the same table for every request: made once per price.
  const flatRates = new WeakMap<LibraryPrice, Rates | undefined>();

  function resolve(providerId: string, model: string, at: Date): PriceCalculation | null {
    const key = `${providerId}\u0000${model}`;
    const cached = cache.get(key);
    if (cached !== undefined) return cached;
    let result: PriceCalculation | null;
    try {
      result = calcPrice({}, model, { providerId, timestamp: at });
    } catch {
      // A price the library cannot apply (a malformed entry, an invalid time): unpriced, never
      // guessed, and not remembered, since another time may resolve.
      return null;
    }
    if (result === null || !Array.isArray(result.model.prices)) {
      if (cache.size >= CACHE_LIMIT) cache.clear();
      cache.set(key, result);
    }
    return result;
  }

  return {
    /** The sheet for `model` at `providerId`, at time `at`, for a request of `inputTokens` total input. */
    lookup(providerId: string, model: string, at: Date, inputTokens: number): PriceSheet | undefined {
      const result = resolve(providerId, model, at);
      if (!result) return undefined;
      const price = result.model_price;
      let rates: Rates | undefined;
      if (flatRates.has(price)) rates = flatRates.get(price);
      else {
        rates = libraryRates(price, inputTokens);
        if (Object.values(price).every((value) => typeof value !== "object")) flatRates.set(price, rates);
      }
      if (!rates) return undefined;
      const dataVersion = result.auto_update_timestamp ? `+data.${result.auto_update_timestamp}` : "";
      return { rates, version: `genai-prices@${GENAI_PRICES_VERSION}${dataVersion}` };
    },
  };
}
export type LibraryPrices = ReturnType<typeof createLibraryPrices>;
