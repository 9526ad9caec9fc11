import type { TokenUsage, UsageUnits } from "@gw/contracts";

/** What one request used, and where, as the usage record tells it. */
export interface PriceInput {
  /** The public model name the caller asked for. */
  model?: string;
  /** The configured provider name that answered. */
  provider?: string;
  /** The upstream's own model name (as it reported it, or the route's). */
  upstream_model?: string;
  /** The public route, e.g. "/v1/chat/completions", "/v1/tools/webtool/search". */
  route: string;
  /** Token counts as reported; absent, or a field absent: none reported. */
  usage?: TokenUsage;
  /** Other units as reported; absent: none. */
  units?: UsageUnits;
  /**
   * When the request was made (ms since the epoch; default: now). The price library dates some
   * price changes, so pass the record's `started_at` to price a record the same way every time.
   */
  at?: number;
}

export const pricedItems = [
  "input_tokens",
  "cached_input_tokens",
  "cache_write_tokens",
  "output_tokens",
  "images",
  "audio_seconds",
  "characters",
  "pages",
  "calls",
  "credits",
] as const;
export type PricedItem = (typeof pricedItems)[number];
export type PricedUnit = "1M tokens" | "image" | "second" | "1K characters" | "page" | "call" | "credit";

/** One billed item: `units` × `unit_price_usd` per `unit` = `amount_usd` (rounded half up to 1e-12 USD). */
export interface PricedLine {
  item: PricedItem;
  /** How many were billed: for input_tokens, the uncached ones (input − cached − cache writes). */
  units: number;
  unit: PricedUnit;
  unit_price_usd: string;
  amount_usd: string;
}

/** A request's cost: null (with a null version and no lines) when no price is known for it. */
export interface Priced {
  /** Exact decimal USD with 12 decimal places, e.g. "0.000123450000"; the exact sum of the lines. */
  cost_usd: string | null;
  /** `config:<hash of the price object>` or `genai-prices@<version>`. */
  price_version: string | null;
  lines: PricedLine[];
}

export interface Pricer {
  price(input: PriceInput): Priced;
  /**
   * The same cost in nano-dollars (1e-9 USD), computed in floating point from the same prices and
   * rounded `up` or to the `nearest`: for budgets, which need it on the request path and no finer.
   * The ledger's amounts come from `price`, exactly. Undefined where `price` says null.
   */
  nano?(input: PriceInput, rounding: "up" | "nearest"): number | undefined;
}
