import { type CallOutcome, type TokenUsage, type UsageUnits, usageUnitNames, wholeMicros } from "./usage";

/**
 * The `x-gw-outcome` header's text: `name=value` pairs joined by `&`, names short and fixed, text
 * values percent-encoded (so the header stays within the characters a header may hold), e.g.
 * `p=openai&um=gpt-4o-2024-08-06&a=1&uus=412500&in=1200&out=80&cr=1024&t=1280`. It is written on every
 * answer and read by ingress after each one: JSON, cold on each request, cost several times as much
 * to write and to check as a header value (bench/README.md).
 */
export function formatCallOutcome(outcome: CallOutcome, totalTokens?: number): string {
  return formatOutcomeText(
    outcome.model,
    outcome.provider,
    outcome.upstream_model,
    outcome.attempts,
    outcome.upstream_ms === undefined ? undefined : wholeMicros(outcome.upstream_ms),
    outcome.ttft_ms === undefined ? undefined : wholeMicros(outcome.ttft_ms),
    outcome.usage,
    outcome.units,
    totalTokens,
  );
}

/**
 * formatCallOutcome's text from the fields themselves, times in whole microseconds: inference writes
 * it straight from its call meter after every answer, without making the outcome object first.
 *
 * Straight-line concatenation, no closures or entry loops: it runs once per answer, cold, and each
 * distinct piece of code touched then costs more than its instructions (bench/README.md).
 */
export function formatOutcomeText(
  model: string | undefined,
  provider: string | undefined,
  upstreamModel: string | undefined,
  attempts: number | undefined,
  upstreamUs: number | undefined,
  ttftUs: number | undefined,
  usage: TokenUsage | undefined,
  units: UsageUnits | undefined,
  totalTokens: number | undefined,
): string {
  let text = namesText(model, provider, upstreamModel);
  if (attempts !== undefined) text += `&a=${attempts}`;
  // Times in whole microseconds: writing a fraction cost several times as much as an integer, and
  // the upstream time is on every answer (the line was a fifth of this function in the live profile).
  if (upstreamUs !== undefined) text += `&uus=${upstreamUs}`;
  if (ttftUs !== undefined) text += `&tus=${ttftUs}`;
  if (usage) {
    if (usage.input_tokens !== undefined) text += `&in=${usage.input_tokens}`;
    if (usage.output_tokens !== undefined) text += `&out=${usage.output_tokens}`;
    if (usage.cached_input_tokens !== undefined) text += `&cr=${usage.cached_input_tokens}`;
    if (usage.cache_write_tokens !== undefined) text += `&cw=${usage.cache_write_tokens}`;
    if (usage.reasoning_tokens !== undefined) text += `&rs=${usage.reasoning_tokens}`;
  }
  if (units) {
    for (const name of usageUnitNames) {
      const value = units[name];
      if (value !== undefined) text += `&u.${name}=${value}`;
    }
  }
  // The answer's total for the token limits, here rather than in a header of its own: ingress then
  // parses one internal header per answer, not two (outcomeTokens reads it back).
  if (totalTokens !== undefined) text += `&t=${totalTokens}`;
  return text.charCodeAt(0) === 0x26 /* & */ ? text.slice(1) : text;
}

/**
 * The names' pairs (`p=openai&um=gpt-4o-mini`), kept whole per provider and upstream model, the
 * pair nearly every answer carries: they come from the configuration and the upstreams' answers, so
 * there are few, and one lookup and one piece cost less than encoding and joining two each time.
 * Other combinations (the model shown, a name missing) are joined from their encoded names.
 */
const namesTexts = new Map<string, Map<string, string>>();
let namesKept = 0;
const MAX_NAMES_KEPT = 1_000;

function namesText(model: string | undefined, provider: string | undefined, upstreamModel: string | undefined): string {
  if (model !== undefined || provider === undefined || upstreamModel === undefined) {
    let text = "";
    if (model !== undefined) text += `&m=${encoded(model)}`;
    if (provider !== undefined) text += `&p=${encoded(provider)}`;
    if (upstreamModel !== undefined) text += `&um=${encoded(upstreamModel)}`;
    return text;
  }
  let byUpstream = namesTexts.get(provider);
  let text = byUpstream?.get(upstreamModel);
  if (text === undefined) {
    if (namesKept >= MAX_NAMES_KEPT) {
      namesTexts.clear();
      namesKept = 0;
      byUpstream = undefined;
    }
    if (!byUpstream) {
      byUpstream = new Map();
      namesTexts.set(provider, byUpstream);
    }
    text = `p=${encoded(provider)}&um=${encoded(upstreamModel)}`;
    byUpstream.set(upstreamModel, text);
    namesKept++;
  }
  return text;
}

/** Names encoded for the header, kept: they are the configuration's (models, providers, upstream models), so there are few. */
const encodedNames = new Map<string, string>();
const MAX_ENCODED_NAMES = 1_000;

function encoded(name: string): string {
  let text = encodedNames.get(name);
  if (text === undefined) {
    text = encodeURIComponent(name);
    if (encodedNames.size >= MAX_ENCODED_NAMES) encodedNames.clear();
    encodedNames.set(name, text);
  }
  return text;
}

const unitOf = new Set<string>(usageUnitNames);

/**
 * The header read back, shaped but unchecked (the usage record carrying it is checked whole by the
 * ledger): unknown names and values that are not numbers where numbers go are left out. Text that is
 * a JSON object (as services wrote it before this format) is read as JSON. Undefined when there is
 * nothing to read.
 *
 * One scan of the text, each field stored under its own literal name: ingress reads one per request,
 * and splitting into pairs and storing through names looked up in maps cost it four times as much.
 */
export function parseCallOutcomeText(text: string | undefined): CallOutcome | undefined {
  if (text === undefined || text === "") return undefined;
  if (text.charCodeAt(0) === 0x7b /* { */) return parseJsonObject(text);
  const outcome: CallOutcome = {};
  let usage: TokenUsage | undefined;
  let units: UsageUnits | undefined;
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf("&", start);
    if (end < 0) end = text.length;
    const eq = text.indexOf("=", start);
    if (eq > start && eq < end) {
      const name = text.slice(start, eq);
      const raw = text.slice(eq + 1, end);
      if (name === "m" || name === "p" || name === "um") {
        const value = decode(raw);
        if (value !== undefined) {
          if (name === "m") outcome.model = value;
          else if (name === "p") outcome.provider = value;
          else outcome.upstream_model = value;
        }
      } else {
        const value = Number(raw);
        if (raw !== "" && Number.isFinite(value)) {
          switch (name) {
            case "a":
              outcome.attempts = value;
              break;
            case "uus":
              outcome.upstream_ms = value / 1000;
              break;
            case "tus":
              outcome.ttft_ms = value / 1000;
              break;
            // Milliseconds, as services wrote them before, so a rolling upgrade keeps its reports.
            case "ums":
              outcome.upstream_ms = value;
              break;
            case "tt":
              outcome.ttft_ms = value;
              break;
            case "in":
              usage ??= {};
              usage.input_tokens = value;
              break;
            case "out":
              usage ??= {};
              usage.output_tokens = value;
              break;
            case "cr":
              usage ??= {};
              usage.cached_input_tokens = value;
              break;
            case "cw":
              usage ??= {};
              usage.cache_write_tokens = value;
              break;
            case "rs":
              usage ??= {};
              usage.reasoning_tokens = value;
              break;
            case "t":
              // The token limits' total, not part of the outcome: outcomeTokens reads it.
              break;
            default:
              // Not a name of this format (one a later version added, say): left out.
              if (name.startsWith("u.") && unitOf.has(name.slice(2))) {
                units ??= {};
                units[name.slice(2) as keyof UsageUnits] = value;
              }
          }
        }
      }
    }
    start = end + 1;
  }
  if (usage) outcome.usage = usage;
  if (units) outcome.units = units;
  const empty =
    !usage &&
    !units &&
    outcome.model === undefined &&
    outcome.provider === undefined &&
    outcome.upstream_model === undefined &&
    outcome.attempts === undefined &&
    outcome.upstream_ms === undefined &&
    outcome.ttft_ms === undefined;
  return empty ? undefined : outcome;
}

/**
 * The answer's total tokens (the first `t`) in an outcome text, for the token limits; undefined when it names
 * none. Found without parsing the rest: ingress needs only this when the answer ends.
 */
export function outcomeTokens(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  let start: number;
  if (text.startsWith("t=")) start = 2;
  else {
    const at = text.indexOf("&t=");
    if (at < 0) return undefined;
    start = at + 3;
  }
  const end = text.indexOf("&", start);
  const raw = end < 0 ? text.slice(start) : text.slice(start, end);
  const value = Number(raw);
  return raw !== "" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function decode(raw: string): string | undefined {
  // Almost every value is a plain name with nothing escaped.
  if (!raw.includes("%")) return raw;
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
