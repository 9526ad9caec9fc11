import type { TokenUsage, UsageUnits } from "@gw/contracts";

/**
 * What the ledger needs of `@gw/pricing`: a record's cost at ingest, as exact decimals, with the
 * price version that set it and the lines it is made of (cost = the exact sum of the lines).
 * Declared here by shape, which `createPricer` satisfies, so tests can price with a table of their
 * own (a price change mid-month) without a configuration file.
 */
export interface PriceQuery {
  model?: string;
  provider?: string;
  upstream_model?: string;
  route: string;
  usage?: TokenUsage;
  units?: UsageUnits;
  /** When the request started (ms): a dated price change prices a record by its own time. */
  at?: number;
}

export interface PriceLine {
  /** What is billed: `input_tokens`, `output_tokens`, `images`, `search_units`, … */
  item: string;
  units: number | string;
  /** The unit a unit price is for: `token`, `image`, `second`, … */
  unit: string;
  unit_price_usd: string;
  amount_usd: string;
}

export interface PriceResult {
  /** Null when the call has no price (an unknown model, a provider without a price). */
  cost_usd: string | null;
  price_version: string | null;
  lines: PriceLine[];
}

export interface Pricer {
  price(query: PriceQuery): PriceResult;
}
