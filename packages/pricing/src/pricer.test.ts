import { GatewayConfig } from "@gw/config";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createPricer } from "./pricer";
import type { PriceInput, Priced } from "./types";
import { addUsd } from "./usd";

const plans = {
  plus: { requests_per_minute: 60, tokens_per_minute: 100_000 },
  pro: { requests_per_minute: 600, tokens_per_minute: 1_000_000 },
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10_000_000 },
};

/** A config with one provider "up" (an address genai-prices does not know) and the given models and tool prices. */
function configWith(models: Record<string, unknown>, tools: { webtool?: object; serptool?: object } = {}) {
  return GatewayConfig.parse({
    providers: {
      up: { kind: "openai", base_url: "http://127.0.0.1:9/v1" },
      jina: { kind: "jina", base_url: "https://api.jina.ai/v1" },
      webtool: { kind: "tavily", base_url: "https://api.tavily.com", ...tools.webtool },
      serptool: { kind: "serpapi", base_url: "https://serpapi.com", ...tools.serptool },
    },
    models,
    plans,
  });
}

const chat = (price: unknown) => ({ type: "chat", routes: [{ provider: "up", model: "house-model" }], price });

function priceOne(price: unknown, input: Partial<PriceInput>): Priced {
  return createPricer(configWith({ m: chat(price) })).price({ model: "m", route: "/v1/chat/completions", usage: {}, units: {}, ...input });
}

/** The lines' amounts added up exactly, to compare with cost_usd. */
function sumOfLines(priced: Priced): string {
  return priced.lines.reduce((total, line) => addUsd(total, line.amount_usd), "0");
}

describe("createPricer: config prices, one hand-computed case per unit", () => {
  it("when tokens include cache reads and writes, then input is billed net of both and each part at its price", () => {
    const priced = priceOne(
      { input_per_mtok: 3, cached_input_per_mtok: 0.3, cache_write_per_mtok: 3.75, output_per_mtok: 15 },
      { usage: { input_tokens: 10_000, cached_input_tokens: 2_000, cache_write_tokens: 1_000, output_tokens: 500, reasoning_tokens: 100 } },
    );
    // 7000 × 3 + 2000 × 0.3 + 1000 × 3.75 + 500 × 15 = 21000 + 600 + 3750 + 7500 = 32850 USD per 1M tokens.
    expect(priced.cost_usd).toBe("0.032850000000");
    expect(priced.lines).toEqual([
      { item: "input_tokens", units: 7000, unit: "1M tokens", unit_price_usd: "3.000000000000", amount_usd: "0.021000000000" },
      { item: "cached_input_tokens", units: 2000, unit: "1M tokens", unit_price_usd: "0.300000000000", amount_usd: "0.000600000000" },
      { item: "cache_write_tokens", units: 1000, unit: "1M tokens", unit_price_usd: "3.750000000000", amount_usd: "0.003750000000" },
      { item: "output_tokens", units: 500, unit: "1M tokens", unit_price_usd: "15.000000000000", amount_usd: "0.007500000000" },
    ]);
    expect(priced.price_version).toMatch(/^config:[0-9a-f]{12}$/);
  });

  it("when the price has no cache prices, then cache reads and writes are billed at the input price", () => {
    const priced = priceOne(
      { input_per_mtok: 2, output_per_mtok: 8 },
      { usage: { input_tokens: 1000, cached_input_tokens: 400, cache_write_tokens: 100, output_tokens: 10 } },
    );
    // All 1000 input tokens at 2 USD/M (0.002) plus 10 output at 8 USD/M (0.00008).
    expect(priced.cost_usd).toBe("0.002080000000");
    expect(priced.lines.map((line) => [line.item, line.units, line.amount_usd])).toEqual([
      ["input_tokens", 500, "0.001000000000"],
      ["cached_input_tokens", 400, "0.000800000000"],
      ["cache_write_tokens", 100, "0.000200000000"],
      ["output_tokens", 10, "0.000080000000"],
    ]);
  });

  it("when images, audio seconds, characters and pages are reported, then each is billed per its unit", () => {
    const route = "/v1/images/generations";
    expect(priceOne({ per_image: 0.04 }, { route, units: { images: 3 } }).cost_usd).toBe("0.120000000000");
    const audio = priceOne({ per_audio_second: 0.0001 }, { units: { audio_seconds: 12.5 } });
    expect(audio.cost_usd).toBe("0.001250000000");
    expect(audio.lines).toEqual([{ item: "audio_seconds", units: 12.5, unit: "second", unit_price_usd: "0.000100000000", amount_usd: "0.001250000000" }]);
    // 2345 characters = 2.345 × 1K at 0.015 USD.
    const chars = priceOne({ per_1k_chars: 0.015 }, { units: { characters: 2345 } });
    expect(chars.cost_usd).toBe("0.035175000000");
    expect(chars.lines[0]).toMatchObject({ item: "characters", units: 2345, unit: "1K characters", unit_price_usd: "0.015000000000" });
    expect(priceOne({ per_page: 0.001 }, { units: { pages: 17 } }).lines).toEqual([
      { item: "pages", units: 17, unit: "page", unit_price_usd: "0.001000000000", amount_usd: "0.017000000000" },
    ]);
  });

  it("when calls are reported, then each is billed; unreported, a request that used anything is one call and a refusal none", () => {
    expect(priceOne({ per_call: 0.002 }, { units: { calls: 3 } }).cost_usd).toBe("0.006000000000");
    const implicit = priceOne({ per_call: 0.002, input_per_mtok: 1 }, { usage: { input_tokens: 1000 } });
    expect(implicit.cost_usd).toBe("0.003000000000");
    expect(implicit.lines.map((line) => [line.item, line.units, line.unit])).toEqual([
      ["input_tokens", 1000, "1M tokens"],
      ["calls", 1, "call"],
    ]);
    expect(priceOne({ per_call: 0.002 }, {}).cost_usd).toBe("0.000000000000");
  });

  it("when a tool route reports credits and calls, then the tool provider's price bills them, the provider found from the route", () => {
    const pricer = createPricer(configWith({}, { webtool: { price: { per_credit: 0.008, per_call: 0.001 } }, serptool: { price: { per_call: 0.015 } } }));
    const search = pricer.price({ route: "/v1/tools/webtool/search", usage: {}, units: { credits: 2, calls: 1 } });
    expect(search.cost_usd).toBe("0.017000000000");
    expect(search.lines).toEqual([
      { item: "calls", units: 1, unit: "call", unit_price_usd: "0.001000000000", amount_usd: "0.001000000000" },
      { item: "credits", units: 2, unit: "credit", unit_price_usd: "0.008000000000", amount_usd: "0.016000000000" },
    ]);
    expect(pricer.price({ route: "/v1/tools/serptool/search", provider: "serptool", usage: {}, units: { calls: 4 } }).cost_usd).toBe("0.060000000000");
    expect(pricer.price({ route: "/v1/tools/serptool/search", usage: {}, units: { search_units: 1 } }).cost_usd).toBe("0.015000000000");
  });

  it("when a price has fields the usage does not use, or the usage has units the price lacks, then those cost 0", () => {
    const priced = priceOne({ per_image: 0.04 }, { usage: { input_tokens: 1000, output_tokens: 10 }, units: { pages: 3 } });
    expect(priced).toMatchObject({ cost_usd: "0.000000000000", lines: [] });
    expect(priced.price_version).toMatch(/^config:/);
  });

  it("when an amount falls between picodollars, then it is rounded half up, once, on its line", () => {
    expect(priceOne({ per_audio_second: 0.000000001 }, { units: { audio_seconds: 0.0005 } }).cost_usd).toBe("0.000000000001");
    expect(priceOne({ per_audio_second: 0.000000001 }, { units: { audio_seconds: 0.0004 } }).cost_usd).toBe("0.000000000000");
  });
});

describe("createPricer: what is and is not priced", () => {
  it("when a request used nothing (a refusal) and its model is priced, then it costs 0 with the price's version and no lines", () => {
    const price = { input_per_mtok: 1, per_call: 1 };
    const priced = priceOne(price, {});
    expect(priced).toEqual({ cost_usd: "0.000000000000", price_version: priceOne(price, { usage: { input_tokens: 1 } }).price_version, lines: [] });
    expect(priced.price_version).toMatch(/^config:/);
    // Usage and units left out altogether are the same as reported empty.
    expect(createPricer(configWith({ m: chat(price) })).price({ model: "m", route: "/v1/chat/completions" })).toEqual(priced);
  });

  it("when no price is known (no config price, a model genai-prices lacks, a Jina route, a tool without price), then cost and version are null", () => {
    const pricer = createPricer(
      configWith({
        local: { type: "chat", routes: [{ provider: "up", model: "llama3.2" }] },
        rr: { type: "rerank", routes: [{ provider: "jina", model: "jina-reranker-v2-base-multilingual" }] },
      }),
    );
    const usage = { input_tokens: 100, output_tokens: 10 };
    const none = { cost_usd: null, price_version: null, lines: [] };
    expect(pricer.price({ model: "local", provider: "up", upstream_model: "llama3.2", route: "/v1/chat/completions", usage, units: {} })).toEqual(none);
    expect(pricer.price({ model: "rr", provider: "jina", route: "/v1/rerank", usage, units: { search_units: 1 } })).toEqual(none);
    expect(pricer.price({ model: "unknown", route: "/v1/chat/completions", usage, units: {} })).toEqual(none);
    expect(pricer.price({ model: "constructor", route: "/v1/chat/completions", usage, units: {} })).toEqual(none);
    expect(pricer.price({ route: "/v1/tools/webtool/search", usage: {}, units: { credits: 1 } })).toEqual(none);
  });

  it("when a count is not a finite non-negative number, then the record is unpriced rather than guessed", () => {
    expect(priceOne({ input_per_mtok: 1 }, { usage: { input_tokens: -5 } }).cost_usd).toBeNull();
    expect(priceOne({ per_page: 1 }, { units: { pages: Number.NaN } }).cost_usd).toBeNull();
  });
});

describe("createPricer: price versions", () => {
  it("when the config price changes, then the version changes; the same price in another order keeps it", () => {
    const usage = { input_tokens: 1000 };
    const a = priceOne({ input_per_mtok: 1, output_per_mtok: 2 }, { usage }).price_version;
    const reordered = priceOne({ output_per_mtok: 2, input_per_mtok: 1 }, { usage }).price_version;
    const changed = priceOne({ input_per_mtok: 1.5, output_per_mtok: 2 }, { usage }).price_version;
    const added = priceOne({ input_per_mtok: 1, output_per_mtok: 2, per_call: 0 }, { usage }).price_version;
    expect(reordered).toBe(a);
    expect(new Set([a, changed, added]).size).toBe(3);
  });

  it("when the same input is priced twice, by one pricer or two, then the answers are equal", () => {
    const input: PriceInput = { model: "m", route: "/v1/chat/completions", usage: { input_tokens: 123_456, output_tokens: 789 }, units: { images: 1 } };
    const config = configWith({ m: chat({ input_per_mtok: 0.123456789, output_per_mtok: 9.87, per_image: 0.01 }) });
    const first = createPricer(config).price(input);
    expect(createPricer(config).price(input)).toEqual(first);
    expect(createPricer(config).price(structuredClone(input))).toEqual(first);
  });
});

describe("createPricer: exactness", () => {
  const price = fc.record(
    {
      input_per_mtok: fc.integer({ min: 0, max: 10_000_000_000 }),
      cached_input_per_mtok: fc.integer({ min: 0, max: 10_000_000_000 }),
      cache_write_per_mtok: fc.integer({ min: 0, max: 10_000_000_000 }),
      output_per_mtok: fc.integer({ min: 0, max: 10_000_000_000 }),
      per_image: fc.integer({ min: 0, max: 10_000_000_000 }),
      per_audio_second: fc.integer({ min: 0, max: 10_000_000_000 }),
      per_1k_chars: fc.integer({ min: 0, max: 10_000_000_000 }),
      per_page: fc.integer({ min: 0, max: 10_000_000_000 }),
      per_call: fc.integer({ min: 0, max: 10_000_000_000 }),
    },
    { requiredKeys: ["input_per_mtok"] },
  );
  const count = fc.integer({ min: 0, max: 2_000_000_000 });

  it("when any prices (up to 9 decimals) bill any usage, then the lines add up to cost_usd exactly and each line is units × price", () => {
    fc.assert(
      fc.property(price, count, count, count, count, fc.nat(100_000), fc.nat(10_000), (nanoPrice, input, cached, write, output, chars, pages) => {
        // Prices drawn as nano-dollars, so each has at most 9 decimal places, as the config allows.
        const usd = Object.fromEntries(Object.entries(nanoPrice).map(([field, nano]) => [field, nano / 1e9]));
        const priced = priceOne(usd, {
          usage: { input_tokens: input + cached + write, cached_input_tokens: cached, cache_write_tokens: write, output_tokens: output },
          units: { characters: chars, pages },
        });
        expect(priced.cost_usd).toBe(addUsd(sumOfLines(priced), "0"));
        for (const line of priced.lines) {
          // units × unit price / per, computed here in BigInt at 1e-21 USD and rounded half up to 1e-12.
          const per = line.unit === "1M tokens" ? 1_000_000n : line.unit === "1K characters" ? 1000n : 1n;
          const exact = BigInt(line.units) * BigInt(line.unit_price_usd.replace(".", "")) * 1_000_000_000n;
          const rounded = (exact / per + 500_000_000n) / 1_000_000_000n;
          expect(BigInt(line.amount_usd.replace(".", "")), line.item).toBe(rounded);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("createPricer: nano-dollars for budgets", () => {
  const config = configWith({
    m: chat({ input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25, per_image: 0.04, per_call: 0.000123 }),
    cheap: chat({ input_per_mtok: 0.075, output_per_mtok: 0.3 }),
  });
  const pricer = createPricer(config);
  const count = fc.nat({ max: 5_000_000 });

  it("when any usage is priced, then the float figure is the exact cost to within its rounding", () => {
    fc.assert(
      fc.property(fc.constantFrom("m", "cheap"), count, count, count, fc.nat({ max: 20 }), (model, input, output, cached, images) => {
        const query = {
          model,
          route: "/v1/chat/completions",
          usage: { input_tokens: input + cached, output_tokens: output, cached_input_tokens: cached },
          units: { images },
        };
        const exact = pricer.price(query).cost_usd;
        expect(exact).not.toBeNull();
        // cost_usd has 12 decimals: as picodollars, a thousandth of a nano-dollar each.
        const pico = Number(BigInt(String(exact).replace(".", "")));
        const up = pricer.nano?.(query, "up") as number;
        const nearest = pricer.nano?.(query, "nearest") as number;
        expect(up * 1000).toBeGreaterThanOrEqual(pico - 1);
        expect(up * 1000 - pico).toBeLessThan(1001);
        expect(Math.abs(nearest * 1000 - pico)).toBeLessThanOrEqual(501);
      }),
    );
  });

  it("when nothing is known of the model's price, then there is no figure, as there is no cost", () => {
    expect(pricer.nano?.({ model: "unknown", route: "/v1/chat/completions", usage: { input_tokens: 5 } }, "up")).toBeUndefined();
    expect(pricer.nano?.({ model: "m", route: "/v1/chat/completions", usage: { input_tokens: -1 } }, "up")).toBeUndefined();
  });
});
