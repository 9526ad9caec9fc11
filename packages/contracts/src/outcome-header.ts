import {
  type CallOutcome,
  outcomeOfRow,
  outcomeRowValues,
  type TokenUsage,
  USAGE_ROW_OUTCOME_AT,
  type UsageUnits,
  usageRowFields,
  usageUnitNames,
  wholeMicros,
} from "./usage";

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

/** Where readOutcomeInto puts each field, from its `at`: its place in a usage row after `outcome.model`. */
const slot = (field: string): number => usageRowFields.indexOf(`outcome.${field}` as (typeof usageRowFields)[number]) - USAGE_ROW_OUTCOME_AT;
const MODEL = slot("model");
const PROVIDER = slot("provider");
const UPSTREAM_MODEL = slot("upstream_model");
const ATTEMPTS = slot("attempts");
const UPSTREAM_MS = slot("upstream_ms");
const TTFT_MS = slot("ttft_ms");
const INPUT = slot("usage.input_tokens");
const OUTPUT = slot("usage.output_tokens");
const CACHED_INPUT = slot("usage.cached_input_tokens");
const CACHE_WRITE = slot("usage.cache_write_tokens");
const REASONING = slot("usage.reasoning_tokens");
const UNITS = slot("units");

/**
 * The header read back, shaped but unchecked (the usage record carrying it is checked whole by the
 * ledger): unknown names and values that are not numbers where numbers go are left out. Text that is
 * a JSON object (as services wrote it before this format) is read as JSON. Undefined when there is
 * nothing to read.
 */
export function parseCallOutcomeText(text: string | undefined): CallOutcome | undefined {
  if (text === undefined || text === "") return undefined;
  if (text.charCodeAt(0) === 0x7b /* { */) return parseJsonObject(text);
  const slots = outcomeRowValues(undefined);
  return readOutcomeInto(text, slots, 0) ? outcomeOfRow(slots, 0) : undefined;
}

/**
 * The header's fields (format as parseCallOutcomeText's) stored into `row` from `at`, in a usage
 * row's order, each slot left as it was (null) where the text has nothing for it; false when it had
 * nothing at all. Ingress makes each usage row straight from the text: no outcome and usage objects
 * are made for every request only to be copied into its row.
 *
 * One scan of the text, each field stored at a fixed place: splitting into pairs and storing through
 * names looked up in maps cost ingress four times as much.
 */
export function readOutcomeInto(text: string | undefined, row: unknown[], at: number): boolean {
  if (text === undefined || text === "") return false;
  if (text.charCodeAt(0) === 0x7b /* { */) return jsonOutcomeInto(parseJsonObject(text), row, at);
  let found = false;
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
          row[at + (name === "m" ? MODEL : name === "p" ? PROVIDER : UPSTREAM_MODEL)] = value;
          found = true;
        }
      } else {
        const value = Number(raw);
        if (raw !== "" && Number.isFinite(value)) {
          let slot = -1;
          let scaled = value;
          switch (name) {
            case "a":
              slot = ATTEMPTS;
              break;
            case "uus":
              slot = UPSTREAM_MS;
              scaled = value / 1000;
              break;
            case "tus":
              slot = TTFT_MS;
              scaled = value / 1000;
              break;
            // Milliseconds, as services wrote them before, so a rolling upgrade keeps its reports.
            case "ums":
              slot = UPSTREAM_MS;
              break;
            case "tt":
              slot = TTFT_MS;
              break;
            case "in":
              slot = INPUT;
              break;
            case "out":
              slot = OUTPUT;
              break;
            case "cr":
              slot = CACHED_INPUT;
              break;
            case "cw":
              slot = CACHE_WRITE;
              break;
            case "rs":
              slot = REASONING;
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
          if (slot >= 0) {
            row[at + slot] = scaled;
            found = true;
          }
        }
      }
    }
    start = end + 1;
  }
  if (units) {
    row[at + UNITS] = units;
    found = true;
  }
  return found;
}

/** An outcome written as JSON (before the header's own format), its fields stored as readOutcomeInto stores them. */
function jsonOutcomeInto(outcome: CallOutcome | undefined, row: unknown[], at: number): boolean {
  if (!outcome) return false;
  let found = false;
  outcomeRowValues(outcome).forEach((value, i) => {
    if (value === null) return;
    row[at + i] = value;
    found = true;
  });
  return found;
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
