import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { GatewayConfig } from "@gw/config";
import { calcPrice } from "@pydantic/genai-prices";
import { afterEach, describe, expect, it, vi } from "vitest";
import { GENAI_PRICES_VERSION, libraryProviderId } from "./library-price";
import { createPricer } from "./pricer";
import type { PriceInput } from "./types";

const plans = {
  plus: { requests_per_minute: 60, tokens_per_minute: 100_000 },
  pro: { requests_per_minute: 600, tokens_per_minute: 1_000_000 },
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10_000_000 },
};

const config = GatewayConfig.parse({
  providers: {
    openai: { kind: "openai", base_url: "https://api.openai.com/v1" },
    anthropic: { kind: "anthropic", base_url: "https://api.anthropic.com" },
    mistral: { kind: "mistral", base_url: "https://api.mistral.ai/v1" },
    groq: { kind: "openai", base_url: "https://api.groq.com/openai/v1" },
  },
  models: {
    "gpt-4o-mini": { type: "chat", routes: [{ provider: "openai", model: "gpt-4o-mini" }] },
    "cheap-mini": { type: "chat", routes: [{ provider: "openai", model: "gpt-4o-mini" }], price: { input_per_mtok: 1, output_per_mtok: 2 } },
    "claude-sonnet": {
      type: "chat",
      routes: [
        { provider: "anthropic", model: "claude-sonnet-4-5" },
        { provider: "openai", model: "gpt-4o" },
      ],
    },
    whisper: { type: "transcription", routes: [{ provider: "openai", model: "whisper-1" }] },
    "gpt-4o-transcribe": { type: "transcription", routes: [{ provider: "openai", model: "gpt-4o-transcribe" }] },
    "mistral-ocr": { type: "ocr", routes: [{ provider: "mistral", model: "mistral-ocr-latest" }] },
  },
  plans,
});
const pricer = createPricer(config);
const chat = "/v1/chat/completions";
const VERSION = `genai-prices@${GENAI_PRICES_VERSION}`;

describe("genai-prices: the package", () => {
  it("when installed, then its version is the one price versions name", () => {
    const entry = createRequire(import.meta.url).resolve("@pydantic/genai-prices");
    const manifest = JSON.parse(readFileSync(join(dirname(entry), "..", "package.json"), "utf8")) as { name: string; version: string };
    expect(manifest.name).toBe("@pydantic/genai-prices");
    expect(manifest.version).toBe(GENAI_PRICES_VERSION);
  });

  describe("offline", () => {
    afterEach(() => vi.unstubAllGlobals());

    it("when fetch is unavailable, then a new pricer prices from the bundled data and never calls it", () => {
      const fetch = vi.fn(() => Promise.reject(new Error("no network in this test")));
      vi.stubGlobal("fetch", fetch);
      const priced = createPricer(config).price({ model: "gpt-4o-mini", route: chat, usage: { input_tokens: 1_000_000 }, units: {} });
      expect(priced.cost_usd).toBe("0.150000000000");
      expect(fetch).not.toHaveBeenCalled();
    });
  });
});

describe("createPricer: library prices", () => {
  it("when openai gpt-4o-mini is used with cache reads, then it is billed at genai-prices' 0.15 / 0.075 / 0.6 USD per 1M", () => {
    const priced = pricer.price({
      model: "gpt-4o-mini",
      provider: "openai",
      upstream_model: "gpt-4o-mini-2024-07-18",
      route: chat,
      usage: { input_tokens: 1_000_000, cached_input_tokens: 200_000, output_tokens: 100_000 },
      units: {},
    });
    // 800000 × 0.15 + 200000 × 0.075 + 100000 × 0.6, per 1M = 0.12 + 0.015 + 0.06.
    expect(priced).toEqual({
      cost_usd: "0.195000000000",
      price_version: VERSION,
      lines: [
        { item: "input_tokens", units: 800_000, unit: "1M tokens", unit_price_usd: "0.150000000000", amount_usd: "0.120000000000" },
        { item: "cached_input_tokens", units: 200_000, unit: "1M tokens", unit_price_usd: "0.075000000000", amount_usd: "0.015000000000" },
        { item: "output_tokens", units: 100_000, unit: "1M tokens", unit_price_usd: "0.600000000000", amount_usd: "0.060000000000" },
      ],
    });
  });

  it("when the model has a config price, then it beats the library's price for the same upstream model", () => {
    const input: PriceInput = {
      model: "cheap-mini",
      provider: "openai",
      upstream_model: "gpt-4o-mini",
      route: chat,
      usage: { input_tokens: 1_000_000 },
      units: {},
    };
    const priced = pricer.price(input);
    expect(priced.cost_usd).toBe("1.000000000000");
    expect(priced.price_version).toMatch(/^config:[0-9a-f]{12}$/);
    expect(pricer.price({ ...input, model: "gpt-4o-mini" }).cost_usd).toBe("0.150000000000");
  });

  it("when an Anthropic call writes and reads the cache, then our cost equals genai-prices' own (input_tokens includes both)", () => {
    const usage = { input_tokens: 12_000, cached_input_tokens: 5_000, cache_write_tokens: 4_000, output_tokens: 700 };
    const priced = pricer.price({ model: "claude-sonnet", provider: "anthropic", route: "/v1/messages", usage, units: {} });
    // 3000 × 3 + 5000 × 0.3 + 4000 × 3.75 + 700 × 15, per 1M = 0.009 + 0.0015 + 0.015 + 0.0105.
    expect(priced.cost_usd).toBe("0.036000000000");
    const theirs = calcPrice({ input_tokens: 12_000, cache_read_tokens: 5_000, cache_write_tokens: 4_000, output_tokens: 700 }, "claude-sonnet-4-5", {
      providerId: "anthropic",
    });
    expect(Number(priced.cost_usd)).toBeCloseTo(theirs?.total_price ?? Number.NaN, 12);
  });

  it("when total input passes a tier's start, then every token is billed at that tier's price, as genai-prices does", () => {
    const usage = { input_tokens: 250_000, output_tokens: 1_000 };
    const priced = pricer.price({ model: "claude-sonnet", provider: "anthropic", route: chat, usage, units: {} });
    // Above 200k input tokens: 6 and 22.5 USD per 1M.
    expect(priced.cost_usd).toBe("1.522500000000");
    expect(Number(priced.cost_usd)).toBeCloseTo(calcPrice(usage, "claude-sonnet-4-5", { providerId: "anthropic" })?.total_price ?? Number.NaN, 12);
  });

  it("when a transcription is priced per hour, then its seconds are billed at the hourly price / 3600", () => {
    const priced = pricer.price({ model: "whisper", provider: "openai", route: "/v1/audio/transcriptions", usage: {}, units: { audio_seconds: 90 } });
    expect(priced.lines).toEqual([{ item: "audio_seconds", units: 90, unit: "second", unit_price_usd: "0.000100000000", amount_usd: "0.009000000000" }]);
  });

  it("when a price changed on a date, then the request's time picks the price in force", () => {
    const ocr = (at: string) =>
      pricer.price({ model: "mistral-ocr", provider: "mistral", route: "/v1/ocr", usage: {}, units: { pages: 10 }, at: Date.parse(at) }).lines[0];
    expect(ocr("2025-03-01T00:00:00Z")).toMatchObject({ unit_price_usd: "0.001000000000", amount_usd: "0.010000000000" });
    expect(ocr("2026-07-01T00:00:00Z")).toMatchObject({ unit_price_usd: "0.004000000000", amount_usd: "0.040000000000" });
    // An invalid time prices nothing, and leaves the next valid one unaffected.
    expect(pricer.price({ model: "mistral-ocr", provider: "mistral", route: "/v1/ocr", units: { pages: 10 }, at: Number.NaN }).cost_usd).toBeNull();
    expect(ocr("2025-03-01T00:00:00Z")).toMatchObject({ amount_usd: "0.010000000000" });
  });

  it("when genai-prices splits the model's tokens by modality, then it is unpriced (our counts do not split them)", () => {
    const usage = { input_tokens: 1000, output_tokens: 100 };
    expect(pricer.price({ model: "gpt-4o-transcribe", provider: "openai", route: "/v1/audio/transcriptions", usage, units: {} }).cost_usd).toBeNull();
  });

  it("when the provider is not reported, then the model's only route names it; with two routes only a request that used nothing is priced", () => {
    expect(pricer.price({ model: "gpt-4o-mini", route: chat, usage: { output_tokens: 1_000_000 }, units: {} }).cost_usd).toBe("0.600000000000");
    expect(pricer.price({ model: "claude-sonnet", route: chat, usage: { output_tokens: 10 }, units: {} }).cost_usd).toBeNull();
    expect(pricer.price({ model: "claude-sonnet", route: chat, usage: {}, units: {} })).toEqual({
      cost_usd: "0.000000000000",
      price_version: VERSION,
      lines: [],
    });
  });

  it("when the fallback route answered, then its own upstream model's price applies", () => {
    const priced = pricer.price({ model: "claude-sonnet", provider: "openai", route: chat, usage: { input_tokens: 1_000_000 }, units: {} });
    expect(priced.lines[0]).toMatchObject({ unit_price_usd: "2.500000000000" });
  });
});

describe("libraryProviderId", () => {
  it("when a provider is of a model kind, then it maps to genai-prices' id; an openai-compatible address it knows picks that vendor", () => {
    expect(libraryProviderId({ kind: "anthropic", base_url: "https://api.anthropic.com" })).toBe("anthropic");
    expect(libraryProviderId({ kind: "cohere", base_url: "https://api.cohere.com" })).toBe("cohere");
    expect(libraryProviderId({ kind: "mistral", base_url: "https://api.mistral.ai/v1" })).toBe("mistral");
    expect(libraryProviderId({ kind: "openai", base_url: "https://api.openai.com/v1" })).toBe("openai");
    expect(libraryProviderId({ kind: "openai", base_url: "https://api.groq.com/openai/v1" })).toBe("groq");
    expect(libraryProviderId({ kind: "openai", base_url: "http://127.0.0.1:11434/v1" })).toBe("openai");
    expect(libraryProviderId({ kind: "jina", base_url: "https://api.jina.ai/v1" })).toBeUndefined();
    expect(libraryProviderId({ kind: "tavily", base_url: "https://api.tavily.com" })).toBeUndefined();
  });
});
