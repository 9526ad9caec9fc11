import type { Express, Response } from "express";
import { PutProviderCredentialBody, type Workspace } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { routeLabel, type Sealer } from "@gw/service-kit";
import { credentialContext } from "../credentials/credential-relay";
import type { CredentialStore } from "../credentials/credential-store";

export interface CredentialRoutesDeps {
  /** The store as the caller (a person's changes name them in the audit trail). */
  credentials(res: Response): CredentialStore;
  /** Seals credentials at rest under GATEWAY_MASTER_KEY; without it they cannot be registered. */
  sealer: Sealer | undefined;
  /** Provider names of the configuration file: a credential is registered for one of them. */
  providers: readonly string[];
  /** The workspace, when the caller may reach it (404 otherwise). */
  workspace(res: Response, id: string): Promise<Workspace>;
  changed(id: string): Promise<void>;
}

/**
 * `/admin/workspaces/{id}/credentials[/{provider}]`: an enterprise workspace registers its own
 * provider credentials (PUT), lists which providers have one (GET) and removes one (DELETE). The
 * key is sealed before it is stored and appears in no answer and no log line.
 */
export function mountCredentialRoutes(app: Express, deps: CredentialRoutesDeps): void {
  const label = routeLabel("/admin/workspaces/:id/credentials");
  app.put("/admin/workspaces/:id/credentials/:provider", label, async (req, res) => {
    const workspace = await deps.workspace(res, req.params.id as string);
    const provider = knownProvider(deps.providers, req.params.provider as string);
    if (workspace.plan !== "enterprise") {
      throw new GatewayError("conflict", "Only workspaces on the enterprise plan can register their own provider credentials");
    }
    if (!deps.sealer) {
      throw new GatewayError("provider_not_configured", "Credential storage is not configured: set GATEWAY_MASTER_KEY");
    }
    const { api_key } = PutProviderCredentialBody.parse(req.body ?? {});
    const info = await deps.credentials(res).put(workspace.id, provider, deps.sealer.seal(api_key, credentialContext(workspace.id, provider)));
    await deps.changed(workspace.id);
    res.json(info);
  });
  app.get("/admin/workspaces/:id/credentials", label, async (req, res) => {
    const workspace = await deps.workspace(res, req.params.id as string);
    res.json({ object: "list", data: await deps.credentials(res).list(workspace.id) });
  });
  app.delete("/admin/workspaces/:id/credentials/:provider", label, async (req, res) => {
    const workspace = await deps.workspace(res, req.params.id as string);
    const provider = knownProvider(deps.providers, req.params.provider as string);
    if (!(await deps.credentials(res).delete(workspace.id, provider))) throw new GatewayError("not_found", `No credential for \`${provider}\``);
    await deps.changed(workspace.id);
    res.json({ object: "provider_credential", workspace_id: workspace.id, provider, deleted: true });
  });
}

function knownProvider(providers: readonly string[], name: string): string {
  if (!providers.includes(name)) {
    throw new GatewayError("invalid_request", `Unknown provider \`${name}\`; configured: ${providers.join(", ") || "none"}`, { param: "provider" });
  }
  return name;
}
