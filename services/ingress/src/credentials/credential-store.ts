import type { Bus } from "@gw/bus";
import type { ProviderCredential } from "@gw/contracts";
import { actingAs, type Db, type Queryable } from "@gw/db";

interface Row {
  workspace_id: string;
  provider: string;
  created_at: Date | string;
  updated_at: Date | string;
}

const seconds = (t: Date | string) => Math.floor(new Date(t).getTime() / 1000);
const toInfo = (r: Row): ProviderCredential => ({
  object: "provider_credential",
  workspace_id: r.workspace_id,
  provider: r.provider,
  created_at: seconds(r.created_at),
  updated_at: seconds(r.updated_at),
});

/** The database's clock in microseconds: orders two changes to one credential whichever replica made them. */
const VERSION = "(extract(epoch from clock_timestamp()) * 1000000)::bigint";

/**
 * Sealed provider credentials of enterprise workspaces. Reads never return the sealed value. Every
 * change is announced on `credentials.changed` once stored, so that unfinished async jobs run their
 * later attempts with the workspace's current credentials; if that fails the caller gets the error
 * and repeats the request (a removal is announced even when nothing was left to remove, so a
 * repeated DELETE still reaches the jobs).
 */
export class CredentialStore {
  private readonly db: Queryable;

  constructor(
    private readonly root: Db,
    private readonly bus?: Bus,
    actor?: string,
  ) {
    this.db = actor === undefined ? root : actingAs(root, actor);
  }

  /** The same store, its changes recorded in the audit trail as made by `actor` (a person). */
  actingAs(actor: string): CredentialStore {
    return new CredentialStore(this.root, this.bus, actor);
  }

  async put(workspaceId: string, provider: string, sealed: string): Promise<ProviderCredential> {
    const { rows } = await this.db.query<Row & { version: string }>(
      `INSERT INTO ingress.provider_credentials (workspace_id, provider, sealed) VALUES ($1, $2, $3)
       ON CONFLICT (workspace_id, provider) DO UPDATE SET sealed = EXCLUDED.sealed, updated_at = now()
       RETURNING workspace_id, provider, created_at, updated_at, ${VERSION} AS version`,
      [workspaceId, provider, sealed],
    );
    const row = rows[0] as Row & { version: string };
    await this.announce(workspaceId, provider, row.version, sealed);
    return toInfo(row);
  }

  async list(workspaceId: string): Promise<ProviderCredential[]> {
    const { rows } = await this.db.query<Row>(
      `SELECT workspace_id, provider, created_at, updated_at FROM ingress.provider_credentials WHERE workspace_id = $1 ORDER BY provider`,
      [workspaceId],
    );
    return rows.map(toInfo);
  }

  async delete(workspaceId: string, provider: string): Promise<boolean> {
    const { rows } = await this.db.query<{ deleted: string; version: string }>(
      `WITH gone AS (DELETE FROM ingress.provider_credentials WHERE workspace_id = $1 AND provider = $2 RETURNING provider)
       SELECT (SELECT count(*) FROM gone) AS deleted, ${VERSION} AS version`,
      [workspaceId, provider],
    );
    const row = rows[0] as { deleted: string; version: string };
    await this.announce(workspaceId, provider, row.version);
    return Number(row.deleted) > 0;
  }

  /** `sealed` is the value as stored (sealed at rest under the master key), so safe on the bus. */
  private async announce(workspaceId: string, provider: string, version: string, sealed?: string): Promise<void> {
    if (!this.bus) return;
    await this.bus.enqueue(
      "credentials.changed",
      { workspace_id: workspaceId, provider, version: Number(version), ...(sealed ? { sealed } : {}) },
      { msgId: `${workspaceId}:${provider}:${version}` },
    );
  }
}
