import { useId } from "react";
import { fmtInt, fmtUsd } from "../format";
import type { Budget, Limits } from "../types";

export interface LimitsDraft {
  rpm: string;
  tpm: string;
}

export const limitsDraft = (limits: Limits | undefined | null): LimitsDraft => ({
  rpm: limits?.requests_per_minute ? String(limits.requests_per_minute) : "",
  tpm: limits?.tokens_per_minute ? String(limits.tokens_per_minute) : "",
});

/** The draft as the API's limits (empty fields left out), or an error message. */
export function limitsOf(draft: LimitsDraft): Limits | string {
  const out: Limits = {};
  for (const [field, name, label] of [
    [draft.rpm, "requests_per_minute", "Requests per minute"],
    [draft.tpm, "tokens_per_minute", "Tokens per minute"],
  ] as const) {
    const text = field.trim();
    if (!text) continue;
    const n = Number(text);
    if (!Number.isInteger(n) || n <= 0) return `${label} must be a whole number above zero`;
    out[name] = n;
  }
  return out;
}

export function LimitsFields({ value, onChange, hint }: { value: LimitsDraft; onChange: (d: LimitsDraft) => void; hint?: string }) {
  const id = useId();
  return (
    <fieldset className="fieldset">
      <legend>Rate limits</legend>
      {hint && <p className="hint">{hint}</p>}
      <div className="field-row">
        <div className="field">
          <label htmlFor={`${id}-rpm`}>Requests per minute</label>
          <input
            id={`${id}-rpm`}
            className="input"
            inputMode="numeric"
            placeholder="Default"
            value={value.rpm}
            onChange={(e) => onChange({ ...value, rpm: e.target.value })}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-tpm`}>Tokens per minute</label>
          <input
            id={`${id}-tpm`}
            className="input"
            inputMode="numeric"
            placeholder="Default"
            value={value.tpm}
            onChange={(e) => onChange({ ...value, tpm: e.target.value })}
          />
        </div>
      </div>
    </fieldset>
  );
}

export interface BudgetDraft {
  on: boolean;
  usd: string;
  mode: "hard" | "soft";
  alert: string;
}

export const budgetDraft = (budget: Budget | null | undefined): BudgetDraft => ({
  on: Boolean(budget),
  usd: budget ? String(budget.monthly_usd) : "",
  mode: budget?.mode ?? "hard",
  alert: budget?.alert_at_percent ? String(budget.alert_at_percent) : "",
});

/** The draft as the API's budget (null: none), or an error message. */
export function budgetOf(draft: BudgetDraft): Budget | null | string {
  if (!draft.on) return null;
  const usd = Number(draft.usd.trim());
  if (!draft.usd.trim() || !Number.isFinite(usd) || usd <= 0) return "The monthly budget must be an amount in dollars above zero";
  if (Math.round(usd * 100) / 100 !== usd) return "The monthly budget must be in whole cents";
  const budget: Budget = { monthly_usd: usd, mode: draft.mode };
  if (draft.alert.trim()) {
    const alert = Number(draft.alert.trim());
    if (!Number.isInteger(alert) || alert < 1 || alert > 99) return "The alert must be a whole percentage from 1 to 99";
    budget.alert_at_percent = alert;
  }
  return budget;
}

export function BudgetFields({ value, onChange, hint }: { value: BudgetDraft; onChange: (d: BudgetDraft) => void; hint?: string }) {
  const id = useId();
  return (
    <fieldset className="fieldset">
      <legend>Monthly budget</legend>
      {hint && <p className="hint">{hint}</p>}
      <div className="check">
        <input id={`${id}-on`} type="checkbox" checked={value.on} onChange={(e) => onChange({ ...value, on: e.target.checked })} />
        <label htmlFor={`${id}-on`}>Set a monthly spend ceiling</label>
      </div>
      {value.on && (
        <>
          <div className="field-row">
            <div className="field">
              <label htmlFor={`${id}-usd`}>Budget (USD per month)</label>
              <input
                id={`${id}-usd`}
                className="input"
                inputMode="decimal"
                required
                value={value.usd}
                onChange={(e) => onChange({ ...value, usd: e.target.value })}
              />
            </div>
            <div className="field">
              <label htmlFor={`${id}-alert`}>Alert at (% of budget)</label>
              <input
                id={`${id}-alert`}
                className="input"
                inputMode="numeric"
                placeholder="None"
                value={value.alert}
                onChange={(e) => onChange({ ...value, alert: e.target.value })}
              />
            </div>
          </div>
          <fieldset className="radios">
            <legend>When the budget is reached</legend>
            <div className="check">
              <input id={`${id}-hard`} type="radio" name={`${id}-mode`} checked={value.mode === "hard"} onChange={() => onChange({ ...value, mode: "hard" })} />
              <label htmlFor={`${id}-hard`}>Refuse requests (hard)</label>
            </div>
            <div className="check">
              <input id={`${id}-soft`} type="radio" name={`${id}-mode`} checked={value.mode === "soft"} onChange={() => onChange({ ...value, mode: "soft" })} />
              <label htmlFor={`${id}-soft`}>Only alert (soft)</label>
            </div>
          </fieldset>
        </>
      )}
    </fieldset>
  );
}

export function describeLimits(limits: Limits | undefined | null): string {
  const parts: string[] = [];
  if (limits?.requests_per_minute) parts.push(`${fmtInt(limits.requests_per_minute)} req/min`);
  if (limits?.tokens_per_minute) parts.push(`${fmtInt(limits.tokens_per_minute)} tok/min`);
  return parts.length > 0 ? parts.join(", ") : "Default";
}

export function describeBudget(budget: Budget | null | undefined): string {
  if (!budget) return "None";
  return `${fmtUsd(budget.monthly_usd)}/month · ${budget.mode}${budget.alert_at_percent ? ` · alert at ${budget.alert_at_percent}%` : ""}`;
}
