import { type CallOutcome, type TokenUsage, type UsageUnits, usageUnitNames } from "./usage";

/**
 * The `x-gw-outcome` header's text: `name=value` pairs joined by `&`, names short and fixed, text
 * values percent-encoded (so the header stays within the characters a header may hold), e.g.
 * `p=openai&um=gpt-4o-2024-08-06&a=1&ums=412.5&in=1200&out=80&cr=1024`. It is written on every
 * answer and read by ingress after each one: JSON, cold on each request, cost several times as much
 * to write and to check as a header value (bench/README.md).
 */
const textNames = { m: "model", p: "provider", um: "upstream_model" } as const;
const numberNames = { a: "attempts", ums: "upstream_ms", tt: "ttft_ms" } as const;
const tokenNames = { in: "input_tokens", out: "output_tokens", cr: "cached_input_tokens", cw: "cache_write_tokens", rs: "reasoning_tokens" } as const;

type Short<T extends Record<string, string>> = [keyof T & string, T[keyof T]][];
const texts = Object.entries(textNames) as Short<typeof textNames>;
const numbers = Object.entries(numberNames) as Short<typeof numberNames>;
const tokens = Object.entries(tokenNames) as Short<typeof tokenNames>;

/**
 * Straight-line concatenation, no closures or entry loops: it runs once per answer, cold, and each
 * distinct piece of code touched then costs more than its instructions (bench/README.md).
 */
export function formatCallOutcome(outcome: CallOutcome): string {
  let text = "";
  if (outcome.model !== undefined) text += `&m=${encodeURIComponent(outcome.model)}`;
  if (outcome.provider !== undefined) text += `&p=${encodeURIComponent(outcome.provider)}`;
  if (outcome.upstream_model !== undefined) text += `&um=${encodeURIComponent(outcome.upstream_model)}`;
  if (outcome.attempts !== undefined) text += `&a=${outcome.attempts}`;
  if (outcome.upstream_ms !== undefined) text += `&ums=${outcome.upstream_ms}`;
  if (outcome.ttft_ms !== undefined) text += `&tt=${outcome.ttft_ms}`;
  const usage = outcome.usage;
  if (usage) {
    if (usage.input_tokens !== undefined) text += `&in=${usage.input_tokens}`;
    if (usage.output_tokens !== undefined) text += `&out=${usage.output_tokens}`;
    if (usage.cached_input_tokens !== undefined) text += `&cr=${usage.cached_input_tokens}`;
    if (usage.cache_write_tokens !== undefined) text += `&cw=${usage.cache_write_tokens}`;
    if (usage.reasoning_tokens !== undefined) text += `&rs=${usage.reasoning_tokens}`;
  }
  const units = outcome.units;
  if (units) {
    for (const name of usageUnitNames) {
      const value = units[name];
      if (value !== undefined) text += `&u.${name}=${value}`;
    }
  }
  return text.length > 0 ? text.slice(1) : text;
}

const textOf = new Map<string, (typeof textNames)[keyof typeof textNames]>(texts);
const numberOf = new Map<string, (typeof numberNames)[keyof typeof numberNames]>(numbers);
const tokenOf = new Map<string, (typeof tokenNames)[keyof typeof tokenNames]>(tokens);
const unitOf = new Set<string>(usageUnitNames);

/**
 * The header read back, shaped but unchecked (the usage record carrying it is checked whole by the
 * ledger): unknown names and values that are not numbers where numbers go are left out. Text that is
 * a JSON object (as services wrote it before this format) is read as JSON. Undefined when there is
 * nothing to read.
 */
export function parseCallOutcomeText(text: string | undefined): CallOutcome | undefined {
  if (text === undefined || text === "") return undefined;
  if (text.startsWith("{")) return parseJsonObject(text);
  const outcome: CallOutcome = {};
  let usage: TokenUsage | undefined;
  let units: UsageUnits | undefined;
  for (const pair of text.split("&")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) continue;
    const short = pair.slice(0, eq);
    const raw = pair.slice(eq + 1);
    const textName = textOf.get(short);
    if (textName !== undefined) {
      const value = decode(raw);
      if (value !== undefined) outcome[textName] = value;
      continue;
    }
    const value = Number(raw);
    if (raw === "" || !Number.isFinite(value)) continue;
    const numberName = numberOf.get(short);
    const tokenName = numberName === undefined ? tokenOf.get(short) : undefined;
    if (numberName !== undefined) {
      outcome[numberName] = value;
    } else if (tokenName !== undefined) {
      usage ??= {};
      usage[tokenName] = value;
    } else if (short.startsWith("u.") && unitOf.has(short.slice(2))) {
      units ??= {};
      units[short.slice(2) as keyof UsageUnits] = value;
    }
  }
  if (usage) outcome.usage = usage;
  if (units) outcome.units = units;
  return Object.keys(outcome).length > 0 ? outcome : undefined;
}

function decode(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

function parseJsonObject(text: string): CallOutcome | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as CallOutcome) : undefined;
  } catch {
    return undefined;
  }
}
