import type { GatewayConfig } from "@gw/config";
import type { TokenUsage, UsageUnits } from "@gw/contracts";
import type { PriceInput, Pricer } from "@gw/pricing";
import { estimateTokenParts, estimateUploadTokens } from "../limits/estimate";

/** Compressed speech runs at 16 to 32 KiB a second: an upload's seconds at the low rate, the most it can hold at speech rates. */
const UPLOAD_BYTES_PER_SECOND = 16 * 1024;

/** What a request may use at most, in the units its route is billed in. */
export interface WorstUsage {
  usage: TokenUsage;
  units: UsageUnits;
}

/**
 * The most a request may use, from what ingress can see before the call: the token estimate's input
 * plus the answer's maximum (the rate limiter's estimate, split), the images asked for, the
 * characters to speak, an upload's seconds at a low speech bit rate, one call of a tool. OCR's pages
 * are not known before the document is read: one page is held, and settlement corrects it.
 */
export function worstUsage(route: string, body: unknown, uploadBytes: number, tokens?: { input: number; output: number }): WorstUsage {
  const fields = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  if (route.startsWith("/v1/tools/")) return { usage: {}, units: { calls: 1 } };
  if (route === "/v1/audio/transcriptions") {
    return { usage: { input_tokens: estimateUploadTokens(uploadBytes) }, units: { audio_seconds: Math.ceil(uploadBytes / UPLOAD_BYTES_PER_SECOND) } };
  }
  const { input, output } = tokens ?? estimateTokenParts(route, body);
  const usage: TokenUsage = { input_tokens: input, output_tokens: output };
  if (route === "/v1/images/generations") {
    const n = typeof fields.n === "number" && Number.isFinite(fields.n) && fields.n >= 1 ? Math.floor(fields.n) : 1;
    return { usage, units: { images: n } };
  }
  if (route === "/v1/audio/speech") {
    return { usage, units: { characters: typeof fields.input === "string" ? [...fields.input].length : 0 } };
  }
  if (route === "/v1/ocr") return { usage, units: { pages: 1 } };
  if (route === "/v1/rerank") return { usage, units: { search_units: 1 } };
  return { usage, units: {} };
}

/**
 * The request's worst-case cost in nano-dollars: its worst usage priced on each deployment the
 * model may be answered by (fallbacks can cost more than the first route), the dearest taken.
 * Undefined when no price is known for any of them: such a request holds nothing, as its record
 * will be unpriced.
 */
export function worstCaseNano(
  pricer: Pricer,
  gateway: GatewayConfig,
  input: { route: string; model: string | undefined; tool: string | undefined; worst: WorstUsage; at: number },
): number | undefined {
  const { route, model, worst, at } = input;
  const candidates: { provider?: string; upstream_model?: string }[] = [];
  const config = model !== undefined && Object.hasOwn(gateway.models, model) ? gateway.models[model] : undefined;
  if (config) for (const r of config.routes) candidates.push({ provider: r.provider, upstream_model: r.model });
  else candidates.push({ provider: input.tool });
  let dearest: number | undefined;
  for (const candidate of candidates) {
    const nano = costNano(pricer, { model, route, at, usage: worst.usage, units: worst.units, ...candidate }, "up");
    if (nano !== undefined && (dearest === undefined || nano > dearest)) dearest = nano;
  }
  return dearest;
}

/** A cost in nano-dollars: the pricer's float figure, or its exact one converted where it has none. */
export function costNano(pricer: Pricer, input: PriceInput, rounding: "up" | "nearest"): number | undefined {
  if (pricer.nano) return pricer.nano(input, rounding);
  const usd = pricer.price(input).cost_usd;
  return usd === null ? undefined : nanoOf(usd, rounding === "up" ? "up" : "half-up");
}

/**
 * A USD decimal string (the pricer's, 12 decimals) in nano-dollars: rounded up for a reservation,
 * half up for a real cost (the ledger keeps the exact amount; a budget needs no finer than 1e-9).
 */
export function nanoOf(usd: string, rounding: "up" | "half-up"): number {
  const [whole = "0", fraction = ""] = usd.split(".");
  const padded = fraction.padEnd(12, "0");
  const pico = BigInt(whole) * 1_000_000_000_000n + BigInt(padded.slice(0, 12) || "0");
  const nano = pico / 1000n;
  const rest = pico % 1000n;
  const bump = rounding === "up" ? rest > 0n : rest >= 500n;
  return Number(bump ? nano + 1n : nano);
}

/** Nano-dollars as dollars with cents, for messages and headers: 50_000_000_000 → "50.00". */
export function usdText(nano: number, decimals = 2): string {
  return (nano / 1e9).toFixed(decimals);
}

/** Nano-dollars as an exact USD decimal with 9 places: 497_000_000 → "0.497000000". */
export function nanoUsd(nano: number): string {
  const whole = Math.floor(nano / 1e9);
  return `${whole}.${String(nano - whole * 1e9).padStart(9, "0")}`;
}
