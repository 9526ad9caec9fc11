/**
 * Shapes the console API answers. The people and permission types come from @gw/contracts; the
 * ledger's (usage rows, logs, statements) and the budget status mirror services/usage and
 * services/ingress, which the console API relays limited to one workspace.
 */
import type {
  ApiKey,
  CapturedBody,
  ConsoleInvitation,
  ConsoleMember,
  ConsoleMembership,
  ConsoleSession,
  LedgerRecord,
  Workspace,
  WorkspaceAction,
  WorkspaceRole,
} from "@gw/contracts";

export type {
  ApiKey,
  CapturedBody,
  ConsoleInvitation,
  ConsoleMember,
  ConsoleMembership,
  ConsoleSession,
  LedgerRecord,
  Workspace,
  WorkspaceAction,
  WorkspaceRole,
};

export type Budget = NonNullable<Workspace["budget"]>;
export type Limits = Workspace["limits"];
export type Plan = Workspace["plan"];

/** `GET /workspaces/{ws}`: the workspace with the person's role and actions there. */
export interface WorkspaceWithRole extends Workspace {
  role: WorkspaceRole | "operator";
  actions: WorkspaceAction[];
}

export interface ConsoleConfig {
  oidc: { enabled: boolean; issuer?: string };
}

export interface List<T> {
  object?: "list";
  data: T[];
}

export interface ModelEntry {
  name: string;
  type?: string;
  price: Record<string, number | string> | null;
}

/** A row of `GET …/usage` (services/usage/src/queries/usage-query.ts). */
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
  cost_usd: string | null;
  latency_ms_p50: number | null;
  latency_ms_p95: number | null;
}

export interface LogsPage {
  object?: "list";
  data: LedgerRecord[];
  next_cursor: string | null;
  has_more?: boolean;
}

export interface StatementLine {
  model: string | null;
  tool: string | null;
  item: string;
  unit: string;
  units: string;
  unit_price_usd: string;
  amount_usd: string;
}

export interface Statement {
  object: "statement";
  workspace_id: string;
  month: string;
  tz: string;
  period_start: string;
  period_end: string;
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

/** `GET …/budget` (services/ingress/src/budgets/budget-gate.ts `status`). */
export interface BudgetStatus {
  object: "budget_status";
  workspace_id: string;
  period: string;
  timezone: string;
  resets_at: string;
  workspace: BudgetLine;
  keys: (BudgetLine & { key_id: string })[];
}

/** `GET …/audit` (services/ingress/src/store/audit-store.ts). */
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

export interface AuditPage {
  object?: "list";
  data: AuditRecord[];
  next_cursor: string | null;
}

export interface ProviderCredential {
  object: "provider_credential";
  workspace_id: string;
  provider: string;
  created_at: number;
  updated_at: number;
}
