import { ApiKey, CreatedApiKey, Workspace } from "@gw/contracts";
import { createPgliteDb, runMigrations, type Db } from "@gw/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashKey } from "../auth/keys";
import { ingressMigrations } from "../service";
import { IdentityStore } from "./identity-store";

let db: Db;
let store: IdentityStore;

beforeAll(async () => {
  db = await createPgliteDb();
  await runMigrations(db, { schema: "ingress", dir: ingressMigrations });
  store = new IdentityStore(db);
}, 60_000);
afterAll(async () => {
  await db?.close();
});

describe("IdentityStore: workspaces", () => {
  it("when a workspace is created with only name and plan, then it defaults to all models, both tools, no limits, active", async () => {
    const ws = await store.createWorkspace({ name: "acme", plan: "plus" });
    expect(Workspace.safeParse(ws).success).toBe(true);
    expect(ws).toMatchObject({
      object: "workspace",
      name: "acme",
      plan: "plus",
      subscription: "active",
      models: ["*"],
      tools: ["webtool", "serptool"],
      limits: {},
    });
    expect(ws.id).toMatch(/^ws_/);
    expect(Math.abs(ws.created_at - Date.now() / 1000)).toBeLessThan(60);
  });

  it("when a workspace is created with lists and limits, then they are stored as given", async () => {
    const ws = await store.createWorkspace({
      name: "beta",
      plan: "enterprise",
      models: ["gpt-*"],
      tools: [],
      limits: { requests_per_minute: 5 },
    });
    expect(await store.getWorkspace(ws.id)).toEqual(ws);
    expect(ws).toMatchObject({ models: ["gpt-*"], tools: [], limits: { requests_per_minute: 5 } });
  });

  it("when workspaces are listed, then every created one is there", async () => {
    const a = await store.createWorkspace({ name: "list-a", plan: "pro" });
    const b = await store.createWorkspace({ name: "list-b", plan: "pro" });
    const ids = (await store.listWorkspaces()).map((w) => w.id);
    expect(ids).toEqual(expect.arrayContaining([a.id, b.id]));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("when a workspace is patched, then only the given fields change", async () => {
    const ws = await store.createWorkspace({ name: "patch-me", plan: "plus", models: ["a"], limits: { tokens_per_minute: 9 } });
    const patched = await store.patchWorkspace(ws.id, { plan: "pro", subscription: "canceled", tools: ["serptool"] });
    expect(patched).toMatchObject({
      id: ws.id,
      name: "patch-me",
      plan: "pro",
      subscription: "canceled",
      models: ["a"],
      tools: ["serptool"],
      limits: { tokens_per_minute: 9 },
    });
    expect(await store.getWorkspace(ws.id)).toEqual(patched);

    const renamed = await store.patchWorkspace(ws.id, { name: "renamed", models: ["*"], limits: {} });
    expect(renamed).toMatchObject({ name: "renamed", plan: "pro", models: ["*"], tools: ["serptool"], limits: {} });
  });

  it("when an unknown workspace is read or patched, then the answer is undefined", async () => {
    expect(await store.getWorkspace("ws_missing")).toBeUndefined();
    expect(await store.patchWorkspace("ws_missing", { plan: "pro" })).toBeUndefined();
  });
});

describe("IdentityStore: keys", () => {
  it("when a key is created, then the secret is returned once and the key record has no secret", async () => {
    const ws = await store.createWorkspace({ name: "keys", plan: "pro" });
    const { key, secret } = await store.createKey(ws.id, { name: "ci" });
    expect(secret).toMatch(/^gw_live_[0-9A-Za-z]{40}$/);
    expect(ApiKey.safeParse(key).success).toBe(true);
    expect(CreatedApiKey.safeParse({ ...key, key: secret }).success).toBe(true);
    expect(key).toMatchObject({ workspace_id: ws.id, name: "ci", status: "active", models: null, tools: null, limits: {} });
    expect(secret.startsWith(key.prefix)).toBe(true);
    expect(JSON.stringify(key)).not.toContain(secret);
    expect(JSON.stringify(key)).not.toContain(secret.slice(key.prefix.length));
  });

  it("when a key is stored, then the table holds its SHA-256 and no column holds the secret", async () => {
    const ws = await store.createWorkspace({ name: "at-rest", plan: "pro" });
    const { key, secret } = await store.createKey(ws.id, {});
    const { rows } = await db.query<{ key_hash: string; prefix: string; row: string }>(
      "SELECT key_hash, prefix, row_to_json(k)::text AS row FROM ingress.api_keys k WHERE id = $1",
      [key.id],
    );
    const row = rows[0];
    expect(row).toBeDefined();
    expect(row?.key_hash).not.toBe(secret);
    expect(row?.key_hash).toBe(hashKey(secret));
    expect(row?.row).not.toContain(secret);
    expect(row?.row).not.toContain(secret.slice("gw_live_".length)); // not even the random part
    const anywhere = await db.query("SELECT 1 FROM ingress.api_keys k WHERE row_to_json(k)::text LIKE $1", [`%${secret}%`]);
    expect(anywhere.rowCount).toBe(0);
  });

  it("when keys are listed, then they carry no secret and belong to the workspace", async () => {
    const ws = await store.createWorkspace({ name: "list-keys", plan: "pro" });
    const other = await store.createWorkspace({ name: "other", plan: "pro" });
    const first = await store.createKey(ws.id, { name: "one", models: ["gpt-*"], tools: ["webtool"], limits: { requests_per_minute: 3 } });
    const second = await store.createKey(ws.id, {});
    await store.createKey(other.id, {});
    const keys = await store.listKeys(ws.id);
    // (no order asserted: rows created in the same millisecond tie on created_at and fall back to the random id)
    expect(keys.map((k) => k.id).sort()).toEqual([first.key.id, second.key.id].sort());
    for (const k of keys) {
      expect(k).not.toHaveProperty("key");
      expect(k).not.toHaveProperty("key_hash");
      expect(JSON.stringify(k)).not.toContain(first.secret);
      expect(JSON.stringify(k)).not.toContain(second.secret);
    }
    expect(keys.find((k) => k.id === first.key.id)).toMatchObject({ models: ["gpt-*"], tools: ["webtool"], limits: { requests_per_minute: 3 } });
    expect(keys.find((k) => k.id === second.key.id)).toMatchObject({ models: null, tools: null, limits: {} });
  });

  it("when a key is looked up by the hash of its secret, then the principal joins the workspace", async () => {
    const ws = await store.createWorkspace({ name: "lookup", plan: "enterprise", tools: ["serptool"] });
    const { key, secret } = await store.createKey(ws.id, { models: ["x"] });
    const principal = await store.findByHash(hashKey(secret));
    expect(principal).toMatchObject({ keyId: key.id, keyStatus: "active", keyModels: ["x"], keyTools: null, keyLimits: {} });
    expect(principal?.workspace).toEqual(ws);
    expect(await store.findByHash(secret)).toBeUndefined(); // the clear secret is not a lookup key
    expect(await store.findByHash(hashKey(`${secret}x`))).toBeUndefined();
  });

  it("when a key is disabled and re-enabled, then its status follows", async () => {
    const ws = await store.createWorkspace({ name: "toggle", plan: "pro" });
    const { key } = await store.createKey(ws.id, {});
    expect(await store.setKeyStatus(key.id, "disabled")).toMatchObject({ id: key.id, status: "disabled" });
    expect(await store.setKeyStatus(key.id, "active")).toMatchObject({ id: key.id, status: "active" });
  });

  it("when a key is revoked, then it can never be re-enabled or disabled: setKeyStatus answers 'revoked'", async () => {
    const ws = await store.createWorkspace({ name: "revoke", plan: "pro" });
    const { key, secret } = await store.createKey(ws.id, {});
    expect(await store.setKeyStatus(key.id, "revoked")).toMatchObject({ id: key.id, status: "revoked" });
    expect(await store.setKeyStatus(key.id, "active")).toBe("revoked");
    expect(await store.setKeyStatus(key.id, "disabled")).toBe("revoked");
    expect((await store.findByHash(hashKey(secret)))?.keyStatus).toBe("revoked");
    // revoking again is harmless
    expect(await store.setKeyStatus(key.id, "revoked")).toMatchObject({ status: "revoked" });
  });

  it("when a key is patched, then only the given fields change and limits are replaced whole", async () => {
    const ws = await store.createWorkspace({ name: "patch-key", plan: "pro" });
    const { key } = await store.createKey(ws.id, { name: "a", models: ["m"], limits: { requests_per_minute: 5, tokens_per_minute: 9 } });
    expect(await store.getKey(key.id)).toEqual(key);
    const renamed = await store.patchKey(key.id, { name: "b" });
    expect(renamed).toMatchObject({ name: "b", status: "active", models: ["m"], limits: { requests_per_minute: 5, tokens_per_minute: 9 } });
    expect(await store.patchKey(key.id, { limits: { tokens_per_minute: 3 } })).toMatchObject({ name: "b", limits: { tokens_per_minute: 3 } });
    expect((await store.getKey(key.id))?.limits).toEqual({ tokens_per_minute: 3 });
    expect(await store.patchKey(key.id, { limits: {}, status: "disabled" })).toMatchObject({ status: "disabled", limits: {} });
  });

  it("when a revoked key is patched, then a status other than revoked answers 'revoked' and changes nothing; other fields may change", async () => {
    const ws = await store.createWorkspace({ name: "patch-revoked", plan: "pro" });
    const { key } = await store.createKey(ws.id, { name: "old" });
    await store.setKeyStatus(key.id, "revoked");
    expect(await store.patchKey(key.id, { status: "active", name: "new" })).toBe("revoked");
    expect(await store.getKey(key.id)).toMatchObject({ status: "revoked", name: "old" });
    expect(await store.patchKey(key.id, { name: "archived" })).toMatchObject({ status: "revoked", name: "archived" });
  });

  it("when an unknown key is read or patched, then the answer is undefined", async () => {
    expect(await store.getKey("key_missing")).toBeUndefined();
    expect(await store.patchKey("key_missing", { name: "x" })).toBeUndefined();
  });

  it("when an unknown key's status is set, then the answer is undefined", async () => {
    expect(await store.setKeyStatus("key_missing", "disabled")).toBeUndefined();
  });

  it("when a key is created for a workspace that does not exist, then it fails", async () => {
    await expect(store.createKey("ws_missing", {})).rejects.toThrow();
  });
});
