import type { LedgerRecord } from "@gw/contracts";
import { eventually } from "./harness";
import type { GatewayTarget } from "./targets";

export type { LedgerRecord };

/** Calls the admin API and returns status and JSON (or text). */
export async function adminGet(gw: Pick<GatewayTarget, "adminURL" | "adminToken">, path: string): Promise<{ status: number; body: unknown; text: string }> {
  const res = await fetch(`${gw.adminURL}${path}`, { headers: { authorization: `Bearer ${gw.adminToken}` } });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // CSV and other text answers stay text.
  }
  return { status: res.status, body, text };
}

/** Waits until the ledger holds the request's record (ingest is asynchronous), then returns it. */
export async function ledgerRecord(gw: Pick<GatewayTarget, "adminURL" | "adminToken">, requestId: string, timeoutMs = 20_000): Promise<LedgerRecord> {
  return eventually(async () => {
    const answer = await adminGet(gw, `/admin/logs/${requestId}`);
    return answer.status === 200 ? (answer.body as LedgerRecord) : undefined;
  }, timeoutMs);
}

/**
 * A cost computed by hand, exactly: each part is units × a price per unit written as a decimal
 * string, summed in picodollars. A price per million tokens in USD is, digit for digit, the price
 * of one token in millionths of a millionth of a dollar times a million, hence the scaling below.
 */
export function handCost(parts: [units: number, pricePerUnitUsd: string][]): string {
  let pico = 0n;
  for (const [units, price] of parts) {
    const [whole, frac = ""] = price.split(".");
    const pricePico = BigInt(whole ?? "0") * 10n ** 12n + BigInt((frac + "0".repeat(12)).slice(0, 12));
    // Fractional units (audio seconds) are given in thousandths.
    const milli = BigInt(Math.round(units * 1000));
    pico += (milli * pricePico) / 1000n;
  }
  return decimalOf(pico);
}

/** Per-million-token price → per-token price, as a decimal string. */
export function perToken(pricePerMtok: string): string {
  const [whole, frac = ""] = pricePerMtok.split(".");
  const micro = BigInt(whole ?? "0") * 1_000_000n + BigInt(`${frac}000000`.slice(0, 6));
  return `0.${micro.toString().padStart(12, "0")}`;
}

/** A decimal string in its shortest form, for comparing amounts written with different scales. */
export function normalUsd(value: string | null): string | null {
  if (value === null) return null;
  const [whole, frac = ""] = value.split(".");
  const trimmed = frac.replace(/0+$/, "");
  return trimmed ? `${BigInt(whole ?? "0")}.${trimmed}` : String(BigInt(whole ?? "0"));
}

function decimalOf(pico: bigint): string {
  const whole = pico / 10n ** 12n;
  const frac = (pico % 10n ** 12n).toString().padStart(12, "0");
  return normalUsd(`${whole}.${frac}`) as string;
}

/** The exact sum of decimal amounts (nulls skipped), in its shortest form. */
export function sumUsd(values: (string | null)[]): string {
  let pico = 0n;
  for (const value of values) {
    if (value === null) continue;
    const [whole, frac = ""] = value.split(".");
    pico += BigInt(whole ?? "0") * 10n ** 12n + BigInt((frac + "0".repeat(12)).slice(0, 12));
  }
  return decimalOf(pico);
}
