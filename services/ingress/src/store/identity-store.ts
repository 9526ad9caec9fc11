import type {
  ApiKey,
  Budget,
  CreateKeyBody,
  KeyLogging,
  WorkspaceLogging,
  CreateWorkspaceBody,
  KeyStatus,
  Limits,
  PatchKeyBody,
  PatchWorkspaceBody,
  Workspace,
} from "@gw/contracts";
import { actingAs, type Db, type Queryable } from "@gw/db";
import { generateKey, newId } from "../auth/keys";

/** The rows authentication needs, read in one query by key hash. */
export interface KeyPrincipal {
  keyId: string;
  keyStatus: KeyStatus;
  keyModels: string[] | null;
  keyTools: string[] | null;
  keyLimits: Limits;
  keyBudget: Budget | null;
  keyLogging: KeyLogging | null;
  workspace: Workspace;
  /** The workspace's own provider credentials, sealed at rest, by provider name. */
  sealedCredentials: Record<string, string>;
}

interface WorkspaceRow {
  id: string;
  name: string;
  plan: Workspace["plan"];
  subscription: Workspace["subscription"];
  models: string[];
  tools: string[];
  limits: Limits;
  timezone: string;
  budget: Budget | null;
  logging: WorkspaceLogging | null;
  created_at: Date | string;
  updated_at: Date | string;
}

interface KeyRow {
  id: string;
  workspace_id: string;
  name: string | null;
  prefix: string;
  status: KeyStatus;
  models: string[] | null;
  tools: string[] | null;
  limits: Limits;
  budget: Budget | null;
  logging: KeyLogging | null;
  created_by: string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

/** Capture off, and the retention it would have: a workspace that never set its logging. */
export const defaultLogging: WorkspaceLogging = Object.freeze({ bodies: false, retention_days: 30 });

const seconds = (t: Date | string) => Math.floor(new Date(t).getTime() / 1000);
const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

function toWorkspace(row: WorkspaceRow): Workspace {
  return {
    id: row.id,
    object: "workspace",
    name: row.name,
    plan: row.plan,
    subscription: row.subscription,
    models: row.models,
    tools: row.tools,
    limits: row.limits,
    timezone: row.timezone,
    budget: row.budget,
    logging: row.logging ?? { ...defaultLogging },
    created_at: seconds(row.created_at),
    updated_at: seconds(row.updated_at),
  };
}

function toApiKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    object: "api_key",
    workspace_id: row.workspace_id,
    name: row.name,
    prefix: row.prefix,
    status: row.status,
    models: row.models,
    tools: row.tools,
    limits: row.limits,
    budget: row.budget,
    logging: row.logging,
    created_by: row.created_by,
    created_at: seconds(row.created_at),
    updated_at: seconds(row.updated_at),
  };
}

const workspaceColumns = "id, name, plan, subscription, models, tools, limits, timezone, budget, logging, created_at, updated_at";
const keyColumns = "id, workspace_id, name, prefix, status, models, tools, limits, budget, logging, created_by, created_at, updated_at";

/** Workspaces and keys in the `ingress` schema; the only code that writes them. */
export class IdentityStore {
  private readonly db: Queryable;

  constructor(
    private readonly root: Db,
    actor?: string,
  ) {
    this.db = actor === undefined ? root : actingAs(root, actor);
  }

  /** The same store, its changes recorded in the audit trail as made by `actor` (a person). */
  actingAs(actor: string): IdentityStore {
    return new IdentityStore(this.root, actor);
  }

  async createWorkspace(body: CreateWorkspaceBody): Promise<Workspace> {
    const { rows } = await this.db.query<WorkspaceRow>(
      `INSERT INTO ingress.workspaces (id, name, plan, models, tools, limits, timezone, budget, logging)
       VALUES ($1, $2, $3, COALESCE($4::jsonb, '["*"]'::jsonb), COALESCE($5::jsonb, '["webtool","serptool"]'::jsonb), COALESCE($6::jsonb, '{}'::jsonb),
               COALESCE($7, 'UTC'), $8::jsonb, $9::jsonb)
       RETURNING ${workspaceColumns}`,
      [newId("ws"), body.name, body.plan, json(body.models), json(body.tools), json(body.limits), body.timezone ?? null, json(body.budget), json(body.logging)],
    );
    return toWorkspace(rows[0] as WorkspaceRow);
  }

  async getWorkspace(id: string): Promise<Workspace | undefined> {
    const { rows } = await this.db.query<WorkspaceRow>(`SELECT ${workspaceColumns} FROM ingress.workspaces WHERE id = $1`, [id]);
    return rows[0] ? toWorkspace(rows[0]) : undefined;
  }

  async listWorkspaces(): Promise<Workspace[]> {
    const { rows } = await this.db.query<WorkspaceRow>(`SELECT ${workspaceColumns} FROM ingress.workspaces ORDER BY created_at, id`);
    return rows.map(toWorkspace);
  }

  async patchWorkspace(id: string, patch: PatchWorkspaceBody): Promise<Workspace | undefined> {
    const { rows } = await this.db.query<WorkspaceRow>(
      `UPDATE ingress.workspaces SET
         name = COALESCE($2, name),
         plan = COALESCE($3, plan),
         subscription = COALESCE($4, subscription),
         models = COALESCE($5::jsonb, models),
         tools = COALESCE($6::jsonb, tools),
         limits = COALESCE($7::jsonb, limits),
         timezone = COALESCE($8, timezone),
         budget = CASE WHEN $9::boolean THEN $10::jsonb ELSE budget END,
         logging = COALESCE($11::jsonb, logging),
         updated_at = now()
       WHERE id = $1
       RETURNING ${workspaceColumns}`,
      [
        id,
        patch.name ?? null,
        patch.plan ?? null,
        patch.subscription ?? null,
        json(patch.models),
        json(patch.tools),
        json(patch.limits),
        patch.timezone ?? null,
        patch.budget !== undefined,
        json(patch.budget ?? undefined),
        json(patch.logging),
      ],
    );
    return rows[0] ? toWorkspace(rows[0]) : undefined;
  }

  /** Creates a key; the secret exists only in the returned value. `createdBy`: the console user making it. */
  async createKey(workspaceId: string, body: CreateKeyBody, createdBy?: string): Promise<{ key: ApiKey; secret: string }> {
    const { secret, hash, prefix } = generateKey();
    const { rows } = await this.db.query<KeyRow>(
      `INSERT INTO ingress.api_keys (id, workspace_id, name, key_hash, prefix, models, tools, limits, budget, logging, created_by)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, COALESCE($8::jsonb, '{}'::jsonb), $9::jsonb, $10::jsonb, $11)
       RETURNING ${keyColumns}`,
      [
        newId("key"),
        workspaceId,
        body.name ?? null,
        hash,
        prefix,
        json(body.models),
        json(body.tools),
        json(body.limits),
        json(body.budget),
        json(body.logging),
        createdBy ?? null,
      ],
    );
    return { key: toApiKey(rows[0] as KeyRow), secret };
  }

  async listKeys(workspaceId: string): Promise<ApiKey[]> {
    const { rows } = await this.db.query<KeyRow>(`SELECT ${keyColumns} FROM ingress.api_keys WHERE workspace_id = $1 ORDER BY created_at, id`, [workspaceId]);
    return rows.map(toApiKey);
  }

  async getKey(id: string): Promise<ApiKey | undefined> {
    const { rows } = await this.db.query<KeyRow>(`SELECT ${keyColumns} FROM ingress.api_keys WHERE id = $1`, [id]);
    return rows[0] ? toApiKey(rows[0]) : undefined;
  }

  /**
   * Changes only the given fields; `limits` replaces the whole object. Revocation is final: a patch
   * that would move a revoked key to another status changes nothing and answers "revoked". The check
   * and the write are one statement, so a concurrent revoke cannot slip between them.
   */
  async patchKey(id: string, patch: PatchKeyBody): Promise<ApiKey | "revoked" | undefined> {
    const status = patch.status ?? null;
    const { rows } = await this.db.query<KeyRow>(
      `UPDATE ingress.api_keys SET
         status = COALESCE($2, status),
         name = COALESCE($3, name),
         limits = COALESCE($4::jsonb, limits),
         budget = CASE WHEN $5::boolean THEN $6::jsonb ELSE budget END,
         logging = CASE WHEN $7::boolean THEN $8::jsonb ELSE logging END,
         updated_at = now()
       WHERE id = $1 AND ($2::text IS NULL OR status <> 'revoked' OR $2 = 'revoked')
       RETURNING ${keyColumns}`,
      [
        id,
        status,
        patch.name ?? null,
        json(patch.limits),
        patch.budget !== undefined,
        json(patch.budget ?? undefined),
        patch.logging !== undefined,
        json(patch.logging ?? undefined),
      ],
    );
    if (rows[0]) return toApiKey(rows[0]);
    const { rows: existing } = await this.db.query<{ status: KeyStatus }>(`SELECT status FROM ingress.api_keys WHERE id = $1`, [id]);
    return existing[0] ? "revoked" : undefined;
  }

  /** Revocation is final: a revoked key never becomes active or disabled again. */
  async setKeyStatus(id: string, status: KeyStatus): Promise<ApiKey | "revoked" | undefined> {
    return this.patchKey(id, { status });
  }

  async findByHash(hash: string): Promise<KeyPrincipal | undefined> {
    return this.findPrincipal("k.key_hash = $1", hash);
  }

  /** A key's principal by its id: for work done later on the key's behalf (a batch's lines). */
  async findByKeyId(id: string): Promise<KeyPrincipal | undefined> {
    return this.findPrincipal("k.id = $1", id);
  }

  private async findPrincipal(where: string, value: string): Promise<KeyPrincipal | undefined> {
    const { rows } = await this.db.query<
      WorkspaceRow & {
        key_id: string;
        key_status: KeyStatus;
        key_models: string[] | null;
        key_tools: string[] | null;
        key_limits: Limits;
        key_budget: Budget | null;
        key_logging: KeyLogging | null;
        credentials: Record<string, string> | null;
      }
    >(
      `SELECT k.id AS key_id, k.status AS key_status, k.models AS key_models, k.tools AS key_tools, k.limits AS key_limits, k.budget AS key_budget, k.logging AS key_logging,
              w.id, w.name, w.plan, w.subscription, w.models, w.tools, w.limits, w.timezone, w.budget, w.logging, w.created_at, w.updated_at,
              (SELECT jsonb_object_agg(c.provider, c.sealed) FROM ingress.provider_credentials c WHERE c.workspace_id = w.id) AS credentials
       FROM ingress.api_keys k JOIN ingress.workspaces w ON w.id = k.workspace_id
       WHERE ${where}`,
      [value],
    );
    const row = rows[0];
    if (!row) return undefined;
    return {
      keyId: row.key_id,
      keyStatus: row.key_status,
      keyModels: row.key_models,
      keyTools: row.key_tools,
      keyLimits: row.key_limits,
      keyBudget: row.key_budget,
      keyLogging: row.key_logging,
      workspace: toWorkspace(row),
      sealedCredentials: row.credentials ?? {},
    };
  }
}
