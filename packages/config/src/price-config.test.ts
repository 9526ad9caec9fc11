import { describe, expect, it } from "vitest";
import { describeIssues } from "./load";
import { GatewayConfig } from "./gateway-config";

const plans = {
  plus: { requests_per_minute: 60, tokens_per_minute: 100_000 },
  pro: { requests_per_minute: 600, tokens_per_minute: 1_000_000 },
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10_000_000 },
};
const providers = {
  openai: { kind: "openai", base_url: "https://api.openai.com/v1" },
  webtool: { kind: "tavily", base_url: "https://api.tavily.com" },
  serptool: { kind: "serpapi", base_url: "https://serpapi.com" },
};

function withModelPrice(price: unknown) {
  return GatewayConfig.safeParse({ providers, plans, models: { m: { type: "chat", routes: [{ provider: "openai", model: "x" }], price } } });
}

/** The issues of a config that must not parse, as the loader words them ("path: problem; …"). */
function problems(result: ReturnType<typeof GatewayConfig.safeParse>): string {
  if (result.success) throw new Error("expected the configuration to be refused");
  return describeIssues(result.error.issues);
}

describe("GatewayConfig: models.<name>.price", () => {
  it("when a model sets all nine prices, then they are kept as written", () => {
    const price = {
      input_per_mtok: 2.5,
      output_per_mtok: 10,
      cached_input_per_mtok: 1.25,
      cache_write_per_mtok: 3.125,
      per_image: 0.04,
      per_audio_second: 0.0001,
      per_1k_chars: 0.015,
      per_page: 0.001,
      per_call: 0.000000001,
    };
    const result = withModelPrice(price);
    expect(result.success).toBe(true);
    expect(result.data?.models.m?.price).toEqual(price);
  });

  it("when a model sets no price, then price is absent; when it sets one field, then only that one is present", () => {
    expect(withModelPrice(undefined).data?.models.m?.price).toBeUndefined();
    expect(withModelPrice({ per_call: 0 }).data?.models.m?.price).toEqual({ per_call: 0 });
  });

  it("when a price is negative, then the message names the field and says so", () => {
    expect(problems(withModelPrice({ input_per_mtok: -1 }))).toBe("models.m.price.input_per_mtok: must not be negative");
  });

  it("when a price has more than 9 decimal places, then it is refused; 9 are accepted, exponent forms included", () => {
    expect(problems(withModelPrice({ per_page: 0.0000000001 }))).toBe("models.m.price.per_page: must have at most 9 decimal places");
    expect(problems(withModelPrice({ per_page: 1.0000000001 }))).toContain("at most 9 decimal places");
    expect(withModelPrice({ per_page: 1e-9, per_call: 1234.123456789 }).success).toBe(true);
  });

  it("when a price is absurd (over 10000 USD) or not a number, then the message says why", () => {
    expect(problems(withModelPrice({ output_per_mtok: 10_001 }))).toContain("models.m.price.output_per_mtok: must be at most 10000 USD");
    expect(problems(withModelPrice({ output_per_mtok: 1e300 }))).toContain("must be at most 10000 USD");
    expect(problems(withModelPrice({ output_per_mtok: "0.15" }))).toContain("models.m.price.output_per_mtok: must be a price in USD");
    expect(problems(withModelPrice({ output_per_mtok: Number.POSITIVE_INFINITY }))).toContain("models.m.price.output_per_mtok");
  });

  it("when the price has an unknown field or no field at all, then it is refused", () => {
    const unknown = withModelPrice({ input_per_1k_tokens: 1 });
    expect(unknown.success).toBe(false);
    expect(unknown.error?.issues[0]).toMatchObject({ code: "unrecognized_keys", path: ["models", "m", "price"], keys: ["input_per_1k_tokens"] });
    expect(problems(withModelPrice({}))).toBe("models.m.price: must set at least one price (input_per_mtok, per_call, …)");
  });
});

describe("GatewayConfig: providers.<name>.price", () => {
  function withProviderPrice(name: keyof typeof providers, price: unknown) {
    return GatewayConfig.safeParse({ providers: { ...providers, [name]: { ...providers[name], price } }, plans });
  }

  it("when a tool provider (tavily, serpapi) sets per_call and per_credit, then they are kept", () => {
    expect(withProviderPrice("webtool", { per_credit: 0.008 }).data?.providers.webtool?.price).toEqual({ per_credit: 0.008 });
    expect(withProviderPrice("serptool", { per_call: 0.015, per_credit: 0 }).data?.providers.serptool?.price).toEqual({ per_call: 0.015, per_credit: 0 });
  });

  it("when a model provider sets a price, then it is refused, pointing at models.<name>.price", () => {
    const message = problems(withProviderPrice("openai", { per_call: 1 }));
    expect(message).toContain("providers.openai.price: only tool providers (kind tavily or serpapi) take a price");
    expect(message).toContain("models.<name>.price");
  });

  it("when a tool price has a model field, a bad value or no field, then it is refused naming the key", () => {
    const unknown = withProviderPrice("webtool", { input_per_mtok: 1 });
    expect(unknown.error?.issues[0]).toMatchObject({ code: "unrecognized_keys", path: ["providers", "webtool", "price"] });
    expect(problems(withProviderPrice("webtool", { per_call: -0.5 }))).toBe("providers.webtool.price.per_call: must not be negative");
    expect(problems(withProviderPrice("serptool", { per_call: 0.0000000001 }))).toContain(
      "providers.serptool.price.per_call: must have at most 9 decimal places",
    );
    expect(problems(withProviderPrice("serptool", {}))).toBe("providers.serptool.price: must set per_call or per_credit");
  });
});
