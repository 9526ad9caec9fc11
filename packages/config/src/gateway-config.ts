import { z } from "zod";
import type { PlanName } from "@gw/contracts";

/** The YAML file named by GATEWAY_CONFIG (docs/configuration.md). Unknown keys are rejected. */

export const providerKinds = ["openai", "anthropic", "cohere", "jina", "mistral", "tavily", "serpapi"] as const;
export const ProviderKind = z.enum(providerKinds);
export type ProviderKind = z.infer<typeof ProviderKind>;

export const modelTypes = ["chat", "completion", "embedding", "rerank", "image", "speech", "transcription", "ocr"] as const;
export const ModelType = z.enum(modelTypes);
export type ModelType = z.infer<typeof ModelType>;

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");

/** An Anthropic beta feature name, as sent in `anthropic-beta` (e.g. `token-efficient-tools-2025-02-19`). */
const AnthropicBeta = z
  .string()
  .max(100)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "must be a beta name: letters, digits, '.', '_' and '-'");

/** The most a config price may be, per unit, in USD: anything larger is surely a typo. */
export const MAX_CONFIG_PRICE_USD = 10_000;
/** Decimal places a config price may have: a nano-dollar is below any provider's price step. */
export const MAX_PRICE_DECIMALS = 9;

/** Decimal places of a number as written: 0.15 → 2, 1e-10 → 10 (String() is the shortest round-trip form). */
function decimalPlaces(value: number): number {
  const match = /^\d+(?:\.(\d+))?(?:e([+-]?\d+))?$/i.exec(String(Math.abs(value)));
  if (!match) return Number.POSITIVE_INFINITY;
  return Math.max(0, (match[1]?.length ?? 0) - Number(match[2] ?? 0));
}

/**
 * A price in USD, exact as written: with at most 9 decimals and at most 10,000, the number YAML
 * reads round-trips to the same decimal, so the pricer's exact arithmetic starts from what was meant.
 */
const UsdPrice = z
  .number({ error: "must be a price in USD (a number)" })
  .min(0, "must not be negative")
  .max(MAX_CONFIG_PRICE_USD, `must be at most ${MAX_CONFIG_PRICE_USD} USD (a larger price is surely a mistake)`)
  .refine((value) => decimalPlaces(value) <= MAX_PRICE_DECIMALS, `must have at most ${MAX_PRICE_DECIMALS} decimal places`);

/** A model's price in USD (docs/pricing.md). Set, it replaces the library's; a missing field costs 0 (cache fields: the input price). */
export const ModelPrice = z
  .strictObject({
    input_per_mtok: UsdPrice.optional(),
    output_per_mtok: UsdPrice.optional(),
    cached_input_per_mtok: UsdPrice.optional(),
    cache_write_per_mtok: UsdPrice.optional(),
    per_image: UsdPrice.optional(),
    per_audio_second: UsdPrice.optional(),
    per_1k_chars: UsdPrice.optional(),
    per_page: UsdPrice.optional(),
    per_call: UsdPrice.optional(),
  })
  .refine((price) => Object.values(price).some((value) => value !== undefined), "must set at least one price (input_per_mtok, per_call, …)");
export type ModelPrice = z.infer<typeof ModelPrice>;

/** Provider kinds that serve the tool routes; only they take a tool `price`. */
export const toolProviderKinds = ["tavily", "serpapi"] as const satisfies readonly ProviderKind[];

/** A tool provider's price in USD: per call made and per credit the provider reports spending. */
export const ToolPrice = z
  .strictObject({ per_call: UsdPrice.optional(), per_credit: UsdPrice.optional() })
  .refine((price) => price.per_call !== undefined || price.per_credit !== undefined, "must set per_call or per_credit");
export type ToolPrice = z.infer<typeof ToolPrice>;

export const ProviderConfig = z
  .strictObject({
    kind: ProviderKind,
    base_url: z.url({ protocol: /^https?$/ }),
    api_key_env: envName.optional(),
    /** Per-attempt timeout: time allowed until the upstream's response headers arrive. */
    timeout_ms: z.number().int().positive().max(600_000).default(60_000),
    /** Retries of a retryable failure (429, 5xx, time-out) on this provider before the next route. */
    max_retries: z.number().int().min(0).max(5).default(2),
    /** Extra headers sent on every upstream request (e.g. OpenRouter's HTTP-Referer). */
    headers: z.record(z.string(), z.string()).optional(),
    /**
     * Anthropic only: the `anthropic-beta` values a caller may send through. Betas can turn on
     * server-side tools that fetch URLs or reach files in the platform's account, so the default is
     * none: any other value the caller sends is dropped, never forwarded.
     */
    anthropic_beta: z.array(AnthropicBeta).max(100).optional(),
    /** Tool providers only: what their calls cost (the price library has no tool prices). */
    price: ToolPrice.optional(),
  })
  .superRefine((provider, ctx) => {
    if (provider.kind !== "anthropic" && provider.anthropic_beta !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["anthropic_beta"],
        message: `only providers of kind anthropic take anthropic_beta (this one is ${provider.kind})`,
      });
    }
    if (provider.price !== undefined && !(toolProviderKinds as readonly ProviderKind[]).includes(provider.kind)) {
      ctx.addIssue({
        code: "custom",
        path: ["price"],
        message: `only tool providers (kind ${toolProviderKinds.join(" or ")}) take a price; price a model under models.<name>.price (this one is ${provider.kind})`,
      });
    }
  });
export type ProviderConfig = z.infer<typeof ProviderConfig>;

export const ModelRoute = z.strictObject({ provider: z.string().min(1), model: z.string().min(1) });
export type ModelRoute = z.infer<typeof ModelRoute>;

export const ModelConfig = z.strictObject({
  type: ModelType,
  routes: z.array(ModelRoute).min(1),
  /** The model's price, whichever route answers; unset, the price library's price for the route. */
  price: ModelPrice.optional(),
});
export type ModelConfig = z.infer<typeof ModelConfig>;

export const PlanLimits = z.strictObject({
  requests_per_minute: z.number().int().positive(),
  tokens_per_minute: z.number().int().positive(),
});

export const GatewayConfig = z
  .strictObject({
    providers: z.record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/), ProviderConfig).default({}),
    models: z.record(z.string().regex(/^[A-Za-z0-9._:/@-]+$/), ModelConfig).default({}),
    plans: z.strictObject({ plus: PlanLimits, pro: PlanLimits, enterprise: PlanLimits }),
  })
  .superRefine((cfg, ctx) => {
    for (const [name, model] of Object.entries(cfg.models)) {
      model.routes.forEach((route, i) => {
        if (!cfg.providers[route.provider]) {
          ctx.addIssue({
            code: "custom",
            path: ["models", name, "routes", i, "provider"],
            message: `unknown provider "${route.provider}"`,
          });
        }
      });
    }
  });
export type GatewayConfig = z.infer<typeof GatewayConfig>;
export type PlanLimitsTable = Record<z.infer<typeof PlanName>, z.infer<typeof PlanLimits>>;
