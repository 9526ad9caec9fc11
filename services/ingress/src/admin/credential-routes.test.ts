import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import type { PlanLimitsTable } from "@gw/config";
import { providerCredentialSealing, type CredentialChanged } from "@gw/contracts";
import { createPgliteDb, runMigrations, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { createMetrics, Sealer, startHttpServer, type RunningServer } from "@gw/service-kit";
import { CredentialStore } from "../credentials/credential-store";
import { ingressMigrations } from "../service";
import { AuditStore } from "../store/audit-store";
import { IdentityStore } from "../store/identity-store";
import { createAdminApp } from "./admin-app";

const adminToken = "credential-routes-admin-token";
const plans: PlanLimitsTable = {
  plus: { requests_per_minute: 60, tokens_per_minute: 100_000 },
  pro: { requests_per_minute: 600, tokens_per_minute: 1_000_000 },
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10_000_000 },
};
const logger = createLogger({ service: "credential-routes-test", level: "silent" });
let db: Db;
let bus: Bus;
const servers: RunningServer[] = [];
const published: string[] = [];
const announced: CredentialChanged[] = [];

async function start(sealer: Sealer | undefined): Promise<string> {
  const app = createAdminApp({
    logger,
    metrics: createMetrics("ingress", { defaults: false }),
    store: new IdentityStore(db),
    audit: new AuditStore(db),
    bus,
    adminToken,
    internalSecret: "credential-routes-internal-secret-0123456789",
    plans,
    onIdentityChanged: () => {},
    credentials: { store: new CredentialStore(db, bus), sealer, providers: ["openai", "anthropic"] },
  });
  const server = await startHttpServer(app, 0, "127.0.0.1");
  servers.push(server);
  return server.url;
}

let url: string;
beforeAll(async () => {
  db = await createPgliteDb();
  await runMigrations(db, { schema: "ingress", dir: ingressMigrations });
  bus = createInProcessBus({ logger });
  bus.subscribe("identity.changed", (m) => void published.push(m.id));
  await bus.consume("credentials.changed", { durable: "jobs" }, async (m) => void announced.push(m));
  url = await start(new Sealer("credential-routes-master-key-0123456789", "provider-credentials"));
}, 60_000);
afterAll(async () => {
  for (const s of servers) await s.close(1_000);
  await bus?.close();
  await db?.close();
});

async function call(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}
const workspace = async (plan: string) => JSON.parse((await call(url, "POST", "/admin/workspaces", { name: "c", plan })).text).id as string;

describe("when an enterprise workspace registers its own provider credential", () => {
  it("then it is stored sealed, listed by provider only, broadcast, and never returned", async () => {
    const ws = await workspace("enterprise");
    const put = await call(url, "PUT", `/admin/workspaces/${ws}/credentials/openai`, { api_key: "sk-enterprise-own-key-123" });
    expect(put.status).toBe(200);
    expect(JSON.parse(put.text)).toMatchObject({ object: "provider_credential", workspace_id: ws, provider: "openai" });
    expect(put.text).not.toContain("sk-enterprise-own-key-123");
    expect(published).toContain(ws);
    const list = await call(url, "GET", `/admin/workspaces/${ws}/credentials`);
    expect(JSON.parse(list.text).data.map((c: { provider: string }) => c.provider)).toEqual(["openai"]);
    expect(list.text).not.toContain("sk-enterprise");
    const { rows } = await db.query<{ sealed: string }>("SELECT sealed FROM ingress.provider_credentials WHERE workspace_id = $1", [ws]);
    expect(rows[0]?.sealed).toMatch(/^v1\./);
    expect(rows[0]?.sealed).not.toContain("sk-enterprise");
    const del = await call(url, "DELETE", `/admin/workspaces/${ws}/credentials/openai`);
    expect(del.status).toBe(200);
    expect((await call(url, "DELETE", `/admin/workspaces/${ws}/credentials/openai`)).status).toBe(404);
    // The audit trail has the put and the delete, naming the provider, and never the key, sealed or not.
    const audit = await call(url, "GET", `/admin/audit?workspace_id=${ws}`);
    const actions = (JSON.parse(audit.text) as { data: { action: string; target: { id: string } }[] }).data.map((r) => `${r.action} ${r.target.id}`);
    expect(actions).toEqual(["credential.delete openai", "credential.create openai", `workspace.create ${ws}`]);
    expect(audit.text).not.toContain("sk-enterprise");
    expect(audit.text).not.toContain("v1.");
    expect(audit.text).not.toContain("sealed");
  });

  it("then each put and delete is announced to the async jobs, the put with the credential as sealed at rest, in version order", async () => {
    const ws = await workspace("enterprise");
    const mine = () => announced.filter((m) => m.workspace_id === ws);
    await call(url, "PUT", `/admin/workspaces/${ws}/credentials/anthropic`, { api_key: "sk-ant-first-000" });
    await call(url, "PUT", `/admin/workspaces/${ws}/credentials/anthropic`, { api_key: "sk-ant-rotated-1" });
    await call(url, "DELETE", `/admin/workspaces/${ws}/credentials/anthropic`);
    await expect.poll(() => mine().length).toBe(3);
    const [first, rotated, removed] = mine() as [CredentialChanged, CredentialChanged, CredentialChanged];
    const atRest = new Sealer("credential-routes-master-key-0123456789", providerCredentialSealing.purpose);
    const context = providerCredentialSealing.context(ws, "anthropic");
    expect([atRest.open(first.sealed ?? "", context), atRest.open(rotated.sealed ?? "", context)]).toEqual(["sk-ant-first-000", "sk-ant-rotated-1"]);
    expect(removed).toMatchObject({ workspace_id: ws, provider: "anthropic" });
    expect(removed.sealed).toBeUndefined();
    expect(first.version < rotated.version && rotated.version < removed.version).toBe(true);
    expect(JSON.stringify(mine())).not.toContain("sk-ant");
  });

  it("then a workspace on another plan, an unknown provider, a bad body or a missing master key is refused", async () => {
    const pro = await workspace("pro");
    expect((await call(url, "PUT", `/admin/workspaces/${pro}/credentials/openai`, { api_key: "sk-pro-key-12345" })).status).toBe(409);
    const ent = await workspace("enterprise");
    const unknown = await call(url, "PUT", `/admin/workspaces/${ent}/credentials/nope`, { api_key: "sk-key-12345678" });
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.text).error.param).toBe("provider");
    expect((await call(url, "PUT", `/admin/workspaces/${ent}/credentials/openai`, { key: "x" })).status).toBe(400);
    expect((await call(url, "PUT", `/admin/workspaces/ws_missing/credentials/openai`, { api_key: "sk-key-12345678" })).status).toBe(404);
    const noMaster = await start(undefined);
    expect((await call(noMaster, "PUT", `/admin/workspaces/${ent}/credentials/openai`, { api_key: "sk-key-12345678" })).status).toBe(503);
  });
});
