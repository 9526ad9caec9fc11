import { createHash, randomBytes } from "node:crypto";
import type { ConsoleUser, WorkspaceRole } from "@gw/contracts";
import type { Db, Queryable } from "@gw/db";

export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  password_hash: string | null;
  operator: boolean;
  oidc_subject: string | null;
}

export interface MembershipRow {
  workspace_id: string;
  user_id: string;
  role: WorkspaceRole;
  created_at: Date | string;
}

export interface LinkRow {
  id: string;
  email: string;
  user_id: string | null;
  workspace_id: string | null;
  role: WorkspaceRole | null;
  created_by: string | null;
  created_at: Date | string;
  expires_at: Date | string;
}

export interface SessionRow {
  token_hash: string;
  user_id: string;
  csrf_token: string;
  created_at: Date | string;
  last_seen_at: Date | string;
  expires_at: Date | string;
}

export interface ConsoleAuditRow {
  id: string;
  at: Date | string;
  actor: string;
  action: string;
  workspace_id: string | null;
  target_kind: string;
  target_id: string;
  detail: unknown;
}

/** A secret handed out once (a session cookie, a link); only its SHA-256 is stored. */
export function newSecret(): { token: string; hash: string } {
  const token = randomBytes(32).toString("base64url");
  return { token, hash: hashSecret(token) };
}

export function hashSecret(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

export const newId = (kind: "usr" | "inv") => `${kind}_${randomBytes(12).toString("hex")}`;

export function publicUser(row: UserRow): ConsoleUser {
  return { id: row.id, email: row.email, name: row.name, operator: row.operator, has_password: row.password_hash !== null };
}

const userColumns = "id, email, name, password_hash, operator, oidc_subject";
const iso = (ms: number) => new Date(ms).toISOString();

/** People, memberships, single-use links, sessions and sign-in failures: the `console` schema. */
export class PeopleStore {
  private constructor(
    private readonly db: Queryable,
    private readonly root: Db | undefined,
  ) {}

  static over(db: Db): PeopleStore {
    return new PeopleStore(db, db);
  }

  /** `fn` with the store bound to one transaction (which cannot start another). */
  transaction<T>(fn: (tx: PeopleStore) => Promise<T>): Promise<T> {
    if (!this.root) return Promise.reject(new Error("PeopleStore: a transaction within a transaction"));
    return this.root.transaction((tx) => fn(new PeopleStore(tx, undefined)));
  }

  // People.

  /** Creates the person, or returns the one with this email (made an operator when asked). */
  async ensureUser(email: string, options: { name?: string; operator?: boolean } = {}): Promise<UserRow> {
    const { rows } = await this.db.query<UserRow>(
      `INSERT INTO console.users (id, email, name, operator) VALUES ($1, $2, $3, $4)
       ON CONFLICT (email) DO UPDATE SET operator = console.users.operator OR EXCLUDED.operator,
         name = COALESCE(console.users.name, EXCLUDED.name), updated_at = now()
       RETURNING ${userColumns}`,
      [newId("usr"), email, options.name ?? null, options.operator ?? false],
    );
    return rows[0] as UserRow;
  }

  async userByEmail(email: string): Promise<UserRow | undefined> {
    const { rows } = await this.db.query<UserRow>(`SELECT ${userColumns} FROM console.users WHERE email = $1`, [email]);
    return rows[0];
  }

  async userById(id: string): Promise<UserRow | undefined> {
    const { rows } = await this.db.query<UserRow>(`SELECT ${userColumns} FROM console.users WHERE id = $1`, [id]);
    return rows[0];
  }

  async userBySubject(subject: string): Promise<UserRow | undefined> {
    const { rows } = await this.db.query<UserRow>(`SELECT ${userColumns} FROM console.users WHERE oidc_subject = $1`, [subject]);
    return rows[0];
  }

  async updateUser(id: string, fields: { passwordHash?: string; name?: string; oidcSubject?: string }): Promise<void> {
    await this.db.query(
      `UPDATE console.users SET password_hash = COALESCE($2, password_hash), name = COALESCE($3, name),
         oidc_subject = COALESCE($4, oidc_subject), updated_at = now() WHERE id = $1`,
      [id, fields.passwordHash ?? null, fields.name ?? null, fields.oidcSubject ?? null],
    );
  }

  async hasOperator(): Promise<boolean> {
    const { rows } = await this.db.query("SELECT 1 FROM console.users WHERE operator LIMIT 1");
    return rows.length > 0;
  }

  // Memberships.

  async membershipsOf(userId: string): Promise<MembershipRow[]> {
    const { rows } = await this.db.query<MembershipRow>(
      "SELECT workspace_id, user_id, role, created_at FROM console.memberships WHERE user_id = $1 ORDER BY created_at, workspace_id",
      [userId],
    );
    return rows;
  }

  async membership(workspaceId: string, userId: string): Promise<MembershipRow | undefined> {
    const { rows } = await this.db.query<MembershipRow>(
      "SELECT workspace_id, user_id, role, created_at FROM console.memberships WHERE workspace_id = $1 AND user_id = $2",
      [workspaceId, userId],
    );
    return rows[0];
  }

  async members(workspaceId: string): Promise<(MembershipRow & { email: string; name: string | null })[]> {
    const { rows } = await this.db.query<MembershipRow & { email: string; name: string | null }>(
      `SELECT m.workspace_id, m.user_id, m.role, m.created_at, u.email, u.name
       FROM console.memberships m JOIN console.users u ON u.id = m.user_id
       WHERE m.workspace_id = $1 ORDER BY m.created_at, u.email`,
      [workspaceId],
    );
    return rows;
  }

  /** Adds the person, or changes their role; answers the role they had before (undefined: new). */
  async setMembership(workspaceId: string, userId: string, role: WorkspaceRole): Promise<WorkspaceRole | undefined> {
    const before = await this.membership(workspaceId, userId);
    await this.db.query(
      `INSERT INTO console.memberships (workspace_id, user_id, role) VALUES ($1, $2, $3)
       ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
      [workspaceId, userId, role],
    );
    return before?.role;
  }

  async removeMembership(workspaceId: string, userId: string): Promise<boolean> {
    const { rowCount } = await this.db.query("DELETE FROM console.memberships WHERE workspace_id = $1 AND user_id = $2", [workspaceId, userId]);
    return rowCount > 0;
  }

  /** Every member and open invitation of a workspace that is being deleted. */
  async forgetWorkspace(workspaceId: string): Promise<void> {
    await this.db.query("DELETE FROM console.memberships WHERE workspace_id = $1", [workspaceId]);
    await this.db.query("DELETE FROM console.links WHERE workspace_id = $1 AND used_at IS NULL", [workspaceId]);
  }

  /** Owners of the workspace, locked until the transaction ends (so the last one cannot be removed twice at once). */
  async ownersLocked(workspaceId: string): Promise<string[]> {
    const { rows } = await this.db.query<{ user_id: string }>("SELECT user_id FROM console.memberships WHERE workspace_id = $1 AND role = 'owner' FOR UPDATE", [
      workspaceId,
    ]);
    return rows.map((r) => r.user_id);
  }

  // Single-use links.

  async createLink(link: {
    email: string;
    userId?: string;
    workspaceId?: string;
    role?: WorkspaceRole;
    createdBy?: string;
    expiresAt: number;
  }): Promise<{ token: string; row: LinkRow }> {
    const { token, hash } = newSecret();
    const { rows } = await this.db.query<LinkRow>(
      `INSERT INTO console.links (id, token_hash, email, user_id, workspace_id, role, created_by, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       RETURNING id, email, user_id, workspace_id, role, created_by, created_at, expires_at`,
      [newId("inv"), hash, link.email, link.userId ?? null, link.workspaceId ?? null, link.role ?? null, link.createdBy ?? null, iso(link.expiresAt)],
    );
    return { token, row: rows[0] as LinkRow };
  }

  /** Uses the link once: the first caller gets it, every later one (and an expired link) nothing. */
  async consumeLink(token: string, now: number): Promise<LinkRow | undefined> {
    const { rows } = await this.db.query<LinkRow>(
      `UPDATE console.links SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2
       RETURNING id, email, user_id, workspace_id, role, created_by, created_at, expires_at`,
      [hashSecret(token), iso(now)],
    );
    return rows[0];
  }

  async invitations(workspaceId: string, now: number): Promise<LinkRow[]> {
    const { rows } = await this.db.query<LinkRow>(
      `SELECT id, email, user_id, workspace_id, role, created_by, created_at, expires_at FROM console.links
       WHERE workspace_id = $1 AND used_at IS NULL AND expires_at > $2 ORDER BY created_at DESC`,
      [workspaceId, iso(now)],
    );
    return rows;
  }

  async revokeInvitation(workspaceId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.db.query("DELETE FROM console.links WHERE workspace_id = $1 AND id = $2 AND used_at IS NULL", [workspaceId, id]);
    return rowCount > 0;
  }

  // Sessions.

  async createSession(userId: string, now: number, absoluteMs: number): Promise<{ token: string; csrf: string }> {
    const { token, hash } = newSecret();
    const csrf = randomBytes(24).toString("base64url");
    await this.db.query(
      "INSERT INTO console.sessions (token_hash, user_id, csrf_token, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $4, $5)",
      [hash, userId, csrf, iso(now), iso(now + absoluteMs)],
    );
    return { token, csrf };
  }

  async session(token: string): Promise<SessionRow | undefined> {
    const { rows } = await this.db.query<SessionRow>(
      "SELECT token_hash, user_id, csrf_token, created_at, last_seen_at, expires_at FROM console.sessions WHERE token_hash = $1",
      [hashSecret(token)],
    );
    return rows[0];
  }

  async touchSession(tokenHash: string, now: number): Promise<void> {
    await this.db.query("UPDATE console.sessions SET last_seen_at = $2 WHERE token_hash = $1", [tokenHash, iso(now)]);
  }

  async deleteSession(tokenHash: string): Promise<void> {
    await this.db.query("DELETE FROM console.sessions WHERE token_hash = $1", [tokenHash]);
  }

  async deleteSessionsOf(userId: string): Promise<number> {
    const { rowCount } = await this.db.query("DELETE FROM console.sessions WHERE user_id = $1", [userId]);
    return rowCount;
  }

  /** Sessions past either expiry, and failures older than any throttle window, are dropped. */
  async sweep(now: number, idleMs: number, failureWindowMs: number): Promise<void> {
    await this.db.query("DELETE FROM console.sessions WHERE expires_at <= $1 OR last_seen_at <= $2", [iso(now), iso(now - idleMs)]);
    await this.db.query("DELETE FROM console.sign_in_failures WHERE at <= $1", [iso(now - failureWindowMs)]);
    await this.db.query("DELETE FROM console.oidc_flows WHERE created_at <= $1", [iso(now - failureWindowMs)]);
  }

  // Single sign-on flows.

  async startOidcFlow(state: string, flow: { codeVerifier: string; nonce: string; returnTo: string; redirectUri: string }, now: number): Promise<void> {
    await this.db.query(
      "INSERT INTO console.oidc_flows (state_hash, code_verifier, nonce, return_to, redirect_uri, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
      [hashSecret(state), flow.codeVerifier, flow.nonce, flow.returnTo, flow.redirectUri, iso(now)],
    );
  }

  /** The flow, once: a replayed callback finds nothing. Flows older than `maxAgeMs` are void. */
  async takeOidcFlow(
    state: string,
    now: number,
    maxAgeMs: number,
  ): Promise<{ code_verifier: string; nonce: string; return_to: string; redirect_uri: string } | undefined> {
    const { rows } = await this.db.query<{ code_verifier: string; nonce: string; return_to: string; redirect_uri: string }>(
      "DELETE FROM console.oidc_flows WHERE state_hash = $1 AND created_at > $2 RETURNING code_verifier, nonce, return_to, redirect_uri",
      [hashSecret(state), iso(now - maxAgeMs)],
    );
    return rows[0];
  }

  // Sign-in failures.

  async recordFailure(subjects: string[], now: number): Promise<void> {
    await this.db.query("INSERT INTO console.sign_in_failures (subject, at) SELECT s, $2 FROM unnest($1::text[]) AS s", [subjects, iso(now)]);
  }

  /** Failures of each subject since `since`, with the oldest one's time (ms). */
  async failures(subjects: string[], since: number): Promise<Map<string, { count: number; oldest: number }>> {
    const { rows } = await this.db.query<{ subject: string; n: string; oldest: Date | string }>(
      "SELECT subject, count(*) AS n, min(at) AS oldest FROM console.sign_in_failures WHERE subject = ANY($1::text[]) AND at > $2 GROUP BY subject",
      [subjects, iso(since)],
    );
    return new Map(rows.map((r) => [r.subject, { count: Number(r.n), oldest: new Date(r.oldest).getTime() }]));
  }

  async clearFailures(subject: string): Promise<void> {
    await this.db.query("DELETE FROM console.sign_in_failures WHERE subject = $1", [subject]);
  }

  // The console's own audit trail.

  async audit(entry: { actor: string; action: string; workspaceId?: string; targetKind: string; targetId: string; detail?: unknown }): Promise<void> {
    await this.db.query("INSERT INTO console.audit (actor, action, workspace_id, target_kind, target_id, detail) VALUES ($1, $2, $3, $4, $5, $6::jsonb)", [
      entry.actor,
      entry.action,
      entry.workspaceId ?? null,
      entry.targetKind,
      entry.targetId,
      entry.detail === undefined ? null : JSON.stringify(entry.detail),
    ]);
  }

  async auditOf(workspaceId: string, limit: number): Promise<ConsoleAuditRow[]> {
    const { rows } = await this.db.query<ConsoleAuditRow>(
      "SELECT id::text, at, actor, action, workspace_id, target_kind, target_id, detail FROM console.audit WHERE workspace_id = $1 ORDER BY id DESC LIMIT $2",
      [workspaceId, limit],
    );
    return rows;
  }
}
