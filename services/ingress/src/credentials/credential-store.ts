import type { ProviderCredential } from "@gw/contracts";
import type { Db } from "@gw/db";

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

/** Sealed provider credentials of enterprise workspaces. Reads never return the sealed value. */
export class CredentialStore {
  constructor(private readonly db: Db) {}

  async put(workspaceId: string, provider: string, sealed: string): Promise<ProviderCredential> {
    const { rows } = await this.db.query<Row>(
      `INSERT INTO ingress.provider_credentials (workspace_id, provider, sealed) VALUES ($1, $2, $3)
       ON CONFLICT (workspace_id, provider) DO UPDATE SET sealed = EXCLUDED.sealed, updated_at = now()
       RETURNING workspace_id, provider, created_at, updated_at`,
      [workspaceId, provider, sealed],
    );
    return toInfo(rows[0] as Row);
  }

  async list(workspaceId: string): Promise<ProviderCredential[]> {
    const { rows } = await this.db.query<Row>(
      `SELECT workspace_id, provider, created_at, updated_at FROM ingress.provider_credentials WHERE workspace_id = $1 ORDER BY provider`,
      [workspaceId],
    );
    return rows.map(toInfo);
  }

  async delete(workspaceId: string, provider: string): Promise<boolean> {
    const { rows } = await this.db.query<{ provider: string }>(
      `DELETE FROM ingress.provider_credentials WHERE workspace_id = $1 AND provider = $2 RETURNING provider`,
      [workspaceId, provider],
    );
    return rows.length > 0;
  }
}
