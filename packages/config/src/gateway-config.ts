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
  })
  .superRefine((provider, ctx) => {
    if (provider.kind !== "anthropic" && provider.anthropic_beta !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["anthropic_beta"],
        message: `only providers of kind anthropic take anthropic_beta (this one is ${provider.kind})`,
      });
    }
  });
export type ProviderConfig = z.infer<typeof ProviderConfig>;

export const ModelRoute = z.strictObject({ provider: z.string().min(1), model: z.string().min(1) });
export type ModelRoute = z.infer<typeof ModelRoute>;

export const ModelConfig = z.strictObject({
  type: ModelType,
  routes: z.array(ModelRoute).min(1),
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
