/**
 * Shapes the console API answers, from @gw/contracts (types only, so no zod reaches the bundle):
 * the people and permissions, and the ledger's reads, budget status and audit records that the
 * console API relays limited to one workspace.
 */
import type { AuditRecord, LedgerRecord, Workspace, WorkspaceAction, WorkspaceRole } from "@gw/contracts";

export type {
  ApiKey,
  AuditRecord,
  BudgetLine,
  BudgetStatus,
  CapturedBody,
  ConsoleInvitation,
  ConsoleMember,
  ConsoleMembership,
  ConsoleSession,
  LedgerRecord,
  Statement,
  StatementLine,
  UsageRow,
  Workspace,
  WorkspaceAction,
  WorkspaceRole,
} from "@gw/contracts";

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

export interface LogsPage {
  object?: "list";
  data: LedgerRecord[];
  next_cursor: string | null;
  has_more?: boolean;
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
