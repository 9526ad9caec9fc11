import type { GatewayConfig, ModelConfig, ProviderConfig } from "@gw/config";
import type { TokenUsage } from "@gw/contracts";
import { bill, billedQuantities, isEmptyUsage, type Rates, unitOf } from "./bill";
import { modelPriceSheet, type PriceSheet, toolPriceSheet } from "./config-price";
import { createLibraryPrices, libraryProviderId } from "./library-price";
import { type PricedItem, pricedItems, type PriceInput, type Priced, type Pricer } from "./types";

function unpriced(): Priced {
  return { cost_usd: null, price_version: null, lines: [] };
}

/** `/v1/tools/<name>/…` → `<name>`, the tool provider's configured name. */
function toolName(route: string): string | undefined {
  return /^\/v1\/tools\/([^/]+)(?:\/|$)/.exec(route)?.[1];
}

/** An own entry of a config record (a model named "constructor" must not find Object's). */
function own<T>(record: Record<string, T>, name: string | undefined): T | undefined {
  return name !== undefined && Object.hasOwn(record, name) ? record[name] : undefined;
}

/**
 * Prices usage records (docs/pricing.md). Precedence: the model's config `price`; else, on a tool
 * route, the tool provider's config `price`; else genai-prices' price for the provider's kind and the
 * upstream model; else unpriced (null), never a guess. The config's prices are read once, here.
 */
export function createPricer(config: GatewayConfig): Pricer {
  const modelSheets = new Map<string, PriceSheet>();
  for (const [name, model] of Object.entries(config.models)) if (model.price) modelSheets.set(name, modelPriceSheet(model.price));
  const toolSheets = new Map<string, PriceSheet>();
  for (const [name, provider] of Object.entries(config.providers)) if (provider.price) toolSheets.set(name, toolPriceSheet(provider.price));
  const library = createLibraryPrices();
  // Which genai-prices provider a configured one is: fixed by the config, and costly to find (the
  // library matches the address against every provider's pattern), so found once per provider.
  const libraryIds = new Map<string, string | undefined>();
  const libraryIdOf = (name: string, provider: ProviderConfig): string | undefined => {
    if (!libraryIds.has(name)) libraryIds.set(name, libraryProviderId(provider));
    return libraryIds.get(name);
  };

  /**
   * The provider that answered: the one reported, else the model's only route; for a request that
   * used nothing, its first route, which names the price of a cost that is 0 whatever the route.
   */
  function answeringProvider(input: PriceInput, model: ModelConfig | undefined, empty: boolean): string | undefined {
    if (input.provider !== undefined) return input.provider;
    if (model && (model.routes.length === 1 || empty)) return model.routes[0]?.provider;
    return undefined;
  }

  function librarySheet(input: PriceInput, model: ModelConfig | undefined, usage: TokenUsage, empty: boolean): PriceSheet | undefined {
    const providerName = answeringProvider(input, model, empty);
    const provider: ProviderConfig | undefined = own(config.providers, providerName);
    if (!provider || providerName === undefined) return undefined;
    const upstreamModel = input.upstream_model ?? model?.routes.find((route) => route.provider === providerName)?.model;
    const providerId = libraryIdOf(providerName, provider);
    if (upstreamModel === undefined || providerId === undefined) return undefined;
    return library.lookup(providerId, upstreamModel, new Date(input.at ?? Date.now()), usage.input_tokens ?? 0);
  }

  function sheetFor(input: PriceInput, usage: TokenUsage, empty: boolean): PriceSheet | undefined {
    const configured = input.model !== undefined ? modelSheets.get(input.model) : undefined;
    if (configured) return configured;
    const tool = toolName(input.route);
    if (tool !== undefined) {
      const toolSheet = toolSheets.get(input.provider ?? tool);
      if (toolSheet) return toolSheet;
    }
    return librarySheet(input, own(config.models, input.model), usage, empty);
  }

  // Each sheet's rates as nano-dollars per single unit (a token, an image…), made once per sheet.
  const nanoRates = new WeakMap<Rates, [PricedItem, number][]>();
  const perUnitOf = (rates: Rates): [PricedItem, number][] => {
    let made = nanoRates.get(rates);
    if (!made) {
      made = [];
      for (const item of pricedItems) {
        const fallback = item === "cached_input_tokens" || item === "cache_write_tokens" ? rates.input_tokens : undefined;
        const pico = rates[item] ?? fallback;
        if (pico !== undefined) made.push([item, Number(pico) / Number(unitOf[item].per) / 1000]);
      }
      nanoRates.set(rates, made);
    }
    return made;
  };

  return {
    nano(input: PriceInput, rounding: "up" | "nearest"): number | undefined {
      const usage = input.usage ?? {};
      const units = input.units ?? {};
      const sheet = sheetFor(input, usage, isEmptyUsage(usage, units));
      if (!sheet) return undefined;
      let quantities: Record<PricedItem, number>;
      try {
        quantities = billedQuantities(usage, units);
      } catch {
        return undefined;
      }
      let total = 0;
      for (const [item, perUnit] of perUnitOf(sheet.rates)) total += quantities[item] * perUnit;
      // To the picodollar first, so float noise on an exact amount cannot round it up a nano-dollar.
      const pico = Math.round(total * 1000) / 1000;
      return rounding === "up" ? Math.ceil(pico) : Math.round(pico);
    },
    price(input: PriceInput): Priced {
      const usage = input.usage ?? {};
      const units = input.units ?? {};
      const empty = isEmptyUsage(usage, units);
      const sheet = sheetFor(input, usage, empty);
      if (!sheet) return unpriced();
      try {
        const { costUsd, lines } = bill(sheet.rates, usage, units);
        return { cost_usd: costUsd, price_version: sheet.version, lines };
      } catch (err) {
        // A count that is not a finite non-negative number cannot be billed: unpriced, never guessed.
        if (err instanceof RangeError) return unpriced();
        throw err;
      }
    },
  };
}
