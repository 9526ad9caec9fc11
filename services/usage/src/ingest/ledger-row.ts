import type { UsageRecord } from "@gw/contracts";
import { storedText } from "../stored-text";
import { isDecimal } from "../decimal";
import type { PriceLine, PriceResult, Pricer } from "../pricing";

/** A record ready to be written: priced, cleaned, with the keys its roll-ups need. */
export interface LedgerRow {
  record: UsageRecord;
  /** UTC day of the record's partition, `YYYYMMDD`. */
  day: string;
  /** Exact decimal, as the pricer wrote it; null when unpriced. */
  cost: string | null;
  priceVersion: string | null;
  lines: PriceLine[];
  /** What the statement bills it under: the public model, or the tool of a tool route. */
  kind: "model" | "tool";
  name: string;
}

const TOOL_ROUTE = /^\/v1\/tools\/([^/]+)/;

const nul = (text: string | undefined): boolean => text?.includes("\u0000") === true;

function hasNul(r: UsageRecord): boolean {
  const o = r.outcome;
  return (
    nul(r.request_id) ||
    nul(r.workspace_id) ||
    nul(r.key_id) ||
    nul(r.route) ||
    nul(r.model) ||
    nul(r.error_type) ||
    nul(r.job_id) ||
    nul(o?.provider) ||
    nul(o?.upstream_model)
  );
}

function cleanRecord(r: UsageRecord): UsageRecord {
  // Almost every record is clean: it is then used as it came, with no copy to make and collect.
  if (!hasNul(r)) return r;
  const outcome = r.outcome && { ...r.outcome, provider: storedText(r.outcome.provider), upstream_model: storedText(r.outcome.upstream_model) };
  return {
    ...r,
    request_id: storedText(r.request_id),
    workspace_id: storedText(r.workspace_id),
    key_id: storedText(r.key_id),
    route: storedText(r.route),
    model: storedText(r.model),
    error_type: storedText(r.error_type),
    job_id: storedText(r.job_id),
    ...(outcome ? { outcome } : {}),
  };
}

export function subjectOf(record: UsageRecord): { kind: "model" | "tool"; name: string } {
  if (record.model) return { kind: "model", name: record.model };
  const tool = TOOL_ROUTE.exec(record.route)?.[1];
  return tool ? { kind: "tool", name: tool } : { kind: "model", name: "" };
}

const dayNames = new Map<number, string>();

/** `YYYYMMDD` of the UTC day an instant falls in (remembered: a batch's records share a few days). */
export function dayOf(at: number): string {
  const day = Math.floor(at / 86_400_000);
  let name = dayNames.get(day);
  if (name === undefined) {
    name = new Date(day * 86_400_000).toISOString().slice(0, 10).replaceAll("-", "");
    if (dayNames.size > 10_000) dayNames.clear();
    dayNames.set(day, name);
  }
  return name;
}

export interface PricingOutcome {
  row: LedgerRow;
  /** The pricer threw: the record is kept unpriced rather than retried for ever. */
  pricingError?: unknown;
}

const unpriced: PriceResult = { cost_usd: null, price_version: null, lines: [] };

/** A price the database can store: decimals where decimals go, so a pricer's slip cannot fail a batch. */
function checked(priced: PriceResult): PriceResult {
  if (priced.cost_usd === null) return priced;
  const sound =
    isDecimal(priced.cost_usd) &&
    priced.lines.every(
      (l) => isDecimal(l.unit_price_usd) && isDecimal(l.amount_usd) && (typeof l.units === "number" ? Number.isFinite(l.units) : isDecimal(l.units)),
    );
  if (!sound) throw new Error(`the pricer answered amounts that are not decimals: ${JSON.stringify(priced)}`);
  return priced;
}

export function toLedgerRow(raw: UsageRecord, pricer: Pricer): PricingOutcome {
  const record = cleanRecord(raw);
  const outcome = record.outcome;
  let priced = unpriced;
  let pricingError: unknown;
  try {
    priced = checked(
      pricer.price({
        model: record.model,
        provider: outcome?.provider,
        upstream_model: outcome?.upstream_model,
        route: record.route,
        usage: outcome?.usage,
        units: outcome?.units,
        at: record.started_at,
      }),
    );
  } catch (err) {
    pricingError = err;
  }
  const { kind, name } = subjectOf(record);
  const row: LedgerRow = {
    record,
    day: dayOf(record.started_at),
    cost: priced.cost_usd,
    priceVersion: priced.price_version === null ? null : storedText(priced.price_version),
    lines: priced.cost_usd === null ? [] : priced.lines,
    kind,
    name,
  };
  return pricingError === undefined ? { row } : { row, pricingError };
}
