import type { Budget } from "./admin";

/**
 * What the ledger's reads, the budget counters and the audit trail answer (the admin API and, for
 * one workspace, the console's API): the services that answer build these, the web app reads them.
 */

/** A row of `GET /admin/usage`: the group's fields (those asked for in group_by), then the sums. */
export interface UsageRow {
  hour?: string;
  day?: string;
  month?: string;
  model?: string | null;
  key_id?: string;
  provider?: string | null;
  route?: string;
  status?: number;
  requests: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_tokens: number;
  /** Exact decimal; null when no record of the group was priced. */
  cost_usd: string | null;
  latency_ms_p50: number | null;
  latency_ms_p95: number | null;
}

export interface StatementLine {
  /** The public model billed, or null on a tool's line. */
  model: string | null;
  /** The tool billed (`webtool`, `serptool`), or null on a model's line. */
  tool: string | null;
  item: string;
  unit: string;
  /** Exact decimals, as strings. */
  units: string;
  unit_price_usd: string;
  amount_usd: string;
}

/** `GET /admin/workspaces/{id}/statement`. */
export interface Statement {
  object: "statement";
  workspace_id: string;
  month: string;
  tz: string;
  period_start: string;
  period_end: string;
  /** `closed`: the month is over and this statement is stored as it is, for good. */
  status: "open" | "closed";
  currency: "usd";
  lines: StatementLine[];
  total_usd: string;
  requests: number;
  unpriced_requests: number;
  generated_at: string;
}

export interface BudgetLine {
  budget: Budget | null;
  spent_usd: string | null;
  held_usd: string | null;
  remaining_usd: string | null;
}

/** `GET /admin/workspaces/{id}/budget`: the month's counters of the workspace and its budgeted keys. */
export interface BudgetStatus {
  object: "budget_status";
  workspace_id: string;
  period: string;
  timezone: string;
  resets_at: string;
  workspace: BudgetLine;
  keys: (BudgetLine & { key_id: string })[];
}

/** One change, as `GET /admin/audit` answers it. */
export interface AuditRecord {
  object: "audit_record";
  id: string;
  at: string;
  actor: string;
  action: string;
  workspace_id: string;
  target: { kind: string; id: string };
  before: unknown;
  after: unknown;
}
