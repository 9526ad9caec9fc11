import { createInProcessBus, type Bus } from "@gw/bus";
import type { PlanLimitsTable } from "@gw/config";
import { type BroadcastMessage, principalHeader } from "@gw/contracts";
import { createPgliteDb, runMigrations, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { createMetrics, signIdentity, startHttpServer, type RunningServer } from "@gw/service-kit";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { ingressMigrations } from "../service";
import { type AuditRecord, AuditStore } from "../store/audit-store";
import { IdentityStore } from "../store/identity-store";
import { createAdminApp } from "./admin-app";
import { consolePrincipals } from "./admin-caller";

const adminToken = "admin-app-test-token";
const internalSecret = "admin-app-test-internal-secret-0123456789";
const plans: PlanLimitsTable = {
  plus: { requests_per_minute: 60, tokens_per_minute: 100_000 },
  pro: { requests_per_minute: 600, tokens_per_minute: 1_000_000 },
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10_000_000 },
};

let db: Db;
let bus: Bus;
let server: RunningServer;
const published: BroadcastMessage<"identity.changed">[] = [];
const applied: { kind: "key" | "workspace"; id: string }[] = [];

beforeAll(async () => {
  db = await createPgliteDb();
  await runMigrations(db, { schema: "ingress", dir: ingressMigrations });
  const logger = createLogger({ service: "admin-app-test", level: "silent" });
  bus = createInProcessBus({ logger });
  bus.subscribe("identity.changed", (message) => {
    published.push(message);
  });
  const app = createAdminApp({
    logger,
    metrics: createMetrics("ingress", { defaults: false }),
    store: new IdentityStore(db),
    audit: new AuditStore(db),
    bus,
    adminToken,
    internalSecret,
    plans,
    onIdentityChanged: (kind, id) => applied.push({ kind, id }),
  });
  server = await startHttpServer(app, 0, "127.0.0.1");
}, 60_000);
afterAll(async () => {
  await server?.close(1_000);
  await bus?.close();
  await db?.close();
});
beforeEach(() => {
  published.length = 0;
  applied.length = 0;
});

interface Answer {
  status: number;
  body: Record<string, unknown> & { error?: { message: string; type: string; param: string | null; code: string } };
}

async function call(method: string, path: string, body?: unknown, token = adminToken): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Answer["body"] };
}

async function workspace(body: Record<string, unknown>): Promise<string> {
  const { status, body: ws } = await call("POST", "/admin/workspaces", { name: "ws", ...body });
  expect(status).toBe(201);
  return ws.id as string;
}

async function key(workspaceId: string, body: Record<string, unknown> = {}): Promise<string> {
  const { status, body: created } = await call("POST", `/admin/workspaces/${workspaceId}/keys`, body);
  expect(status, JSON.stringify(created)).toBe(201);
  return created.id as string;
}

const keyChangedFor = (id: string) => vi.waitFor(() => expect(published).toContainEqual(expect.objectContaining({ kind: "key", id })));

describe("POST /admin/workspaces/{id}/keys: key limits narrow the workspace's", () => {
  it("when the key's limits are within the plan's defaults (equal included), then 201 with the limits stored", async () => {
    const ws = await workspace({ plan: "plus" });
    const { status, body } = await call("POST", `/admin/workspaces/${ws}/keys`, {
      limits: { requests_per_minute: 60, tokens_per_minute: 50_000 },
    });
    expect(status).toBe(201);
    expect(body).toMatchObject({ object: "api_key", limits: { requests_per_minute: 60, tokens_per_minute: 50_000 } });
    expect(body.key).toMatch(/^gw_live_/);
  });

  it("when the key's requests_per_minute exceeds the plan's default, then 400 naming limits.requests_per_minute", async () => {
    const ws = await workspace({ plan: "plus" });
    const { status, body } = await call("POST", `/admin/workspaces/${ws}/keys`, { limits: { requests_per_minute: 61 } });
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_request", param: "limits.requests_per_minute" });
    expect(body.error?.message).toContain("61");
    expect(body.error?.message).toContain("workspace's 60");
    const list = await call("GET", `/admin/workspaces/${ws}/keys`);
    expect(list.body.data).toEqual([]); // nothing was created
  });

  it("when the workspace overrides its plan, then the override is the ceiling, lower or higher than the plan", async () => {
    const lowered = await workspace({ plan: "pro", limits: { tokens_per_minute: 1_000 } });
    const above = await call("POST", `/admin/workspaces/${lowered}/keys`, { limits: { tokens_per_minute: 1_001 } });
    expect(above.status).toBe(400);
    expect(above.body.error).toMatchObject({ param: "limits.tokens_per_minute" });
    expect(above.body.error?.message).toContain("workspace's 1000");
    // the plan's other default still applies where the workspace does not override
    expect((await call("POST", `/admin/workspaces/${lowered}/keys`, { limits: { requests_per_minute: 601 } })).body.error?.param).toBe(
      "limits.requests_per_minute",
    );
    await key(lowered, { limits: { requests_per_minute: 600, tokens_per_minute: 1_000 } });

    const raised = await workspace({ plan: "plus", limits: { requests_per_minute: 9_000 } });
    await key(raised, { limits: { requests_per_minute: 8_000 } });
  });

  it("when the key has no limits, then 201 whatever the workspace's", async () => {
    const ws = await workspace({ plan: "plus", limits: { requests_per_minute: 1 } });
    await key(ws, { name: "plain" });
  });
});

describe("PATCH /admin/keys/{id}", () => {
  it("when limits within the workspace's are patched, then 200, they replace the old ones and the change is broadcast", async () => {
    const ws = await workspace({ plan: "pro", limits: { requests_per_minute: 100 } });
    const id = await key(ws, { limits: { requests_per_minute: 50, tokens_per_minute: 10 } });
    const { status, body } = await call("PATCH", `/admin/keys/${id}`, { limits: { requests_per_minute: 100 } });
    expect(status).toBe(200);
    expect(body).toMatchObject({ id, object: "api_key", status: "active", limits: { requests_per_minute: 100 } });
    expect(body.limits).not.toHaveProperty("tokens_per_minute");
    expect(body).not.toHaveProperty("key");
    expect(applied).toEqual([{ kind: "key", id }]);
    await keyChangedFor(id);
  });

  it("when limits are patched to {}, then the key's overrides are cleared", async () => {
    const ws = await workspace({ plan: "pro" });
    const id = await key(ws, { limits: { requests_per_minute: 5 } });
    const { status, body } = await call("PATCH", `/admin/keys/${id}`, { limits: {} });
    expect(status).toBe(200);
    expect(body.limits).toEqual({});
    await keyChangedFor(id);
  });

  it("when a patched limit exceeds the workspace's, then 400 naming the field and the key is unchanged", async () => {
    const ws = await workspace({ plan: "enterprise", limits: { tokens_per_minute: 500 } });
    const id = await key(ws, { name: "before", limits: { tokens_per_minute: 400 } });
    const { status, body } = await call("PATCH", `/admin/keys/${id}`, { name: "after", limits: { tokens_per_minute: 501 } });
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: "invalid_request", param: "limits.tokens_per_minute" });
    expect(body.error?.message).toContain("workspace's 500");
    const [stored] = (await call("GET", `/admin/workspaces/${ws}/keys`)).body.data as Record<string, unknown>[];
    expect(stored).toMatchObject({ name: "before", limits: { tokens_per_minute: 400 } });
    expect(applied).toEqual([]);
  });

  it("when name and status are patched together, then both change in one call", async () => {
    const ws = await workspace({ plan: "plus" });
    const id = await key(ws, { name: "old" });
    const { status, body } = await call("PATCH", `/admin/keys/${id}`, { name: "new", status: "disabled" });
    expect(status).toBe(200);
    expect(body).toMatchObject({ id, name: "new", status: "disabled" });
    await keyChangedFor(id);
  });

  it("when the body is empty, has an unknown field or a bad value, then 400 and nothing is broadcast", async () => {
    const ws = await workspace({ plan: "plus" });
    const id = await key(ws);
    const empty = await call("PATCH", `/admin/keys/${id}`, {});
    expect(empty.status).toBe(400);
    expect(empty.body.error?.message).toContain("at least one field");
    expect((await call("PATCH", `/admin/keys/${id}`, { models: ["x"] })).status).toBe(400);
    const negative = await call("PATCH", `/admin/keys/${id}`, { limits: { requests_per_minute: -1 } });
    expect(negative.status).toBe(400);
    expect(negative.body.error?.param).toBe("limits.requests_per_minute");
    expect((await call("PATCH", `/admin/keys/${id}`, { limits: { burst: 1 } })).status).toBe(400);
    expect((await call("PATCH", `/admin/keys/${id}`, { name: "" })).status).toBe(400);
    expect(applied).toEqual([]);
  });

  it("when a revoked key is patched back to active, then 409 and nothing else in the patch is applied", async () => {
    const ws = await workspace({ plan: "plus" });
    const id = await key(ws, { name: "gone" });
    expect((await call("PATCH", `/admin/keys/${id}`, { status: "revoked" })).status).toBe(200);
    applied.length = 0;
    const { status, body } = await call("PATCH", `/admin/keys/${id}`, { status: "active", name: "back" });
    expect(status).toBe(409);
    expect(body.error).toMatchObject({ code: "conflict" });
    expect(((await call("GET", `/admin/workspaces/${ws}/keys`)).body.data as Record<string, unknown>[])[0]).toMatchObject({
      status: "revoked",
      name: "gone",
    });
    expect(applied).toEqual([]);
  });

  it("when the key does not exist, then 404, with or without limits in the patch", async () => {
    expect((await call("PATCH", "/admin/keys/key_missing", { status: "disabled" })).status).toBe(404);
    expect((await call("PATCH", "/admin/keys/key_missing", { limits: { requests_per_minute: 1 } })).status).toBe(404);
  });

  it("when the admin token is missing or wrong, then 401 and the key is unchanged", async () => {
    const ws = await workspace({ plan: "plus" });
    const id = await key(ws);
    expect((await call("PATCH", `/admin/keys/${id}`, { status: "disabled" }, "wrong")).status).toBe(401);
    const res = await fetch(`${server.url}/admin/keys/${id}`, { method: "PATCH", body: JSON.stringify({ status: "disabled" }) });
    expect(res.status).toBe(401);
    const [stored] = (await call("GET", `/admin/workspaces/${ws}/keys`)).body.data as Record<string, unknown>[];
    expect(stored?.status).toBe("active");
  });
});

describe("budgets and time zones", () => {
  it("when a workspace is created with a zone and a budget, then both are stored, the zone in its canonical spelling", async () => {
    const { status, body } = await call("POST", "/admin/workspaces", {
      name: "berlin",
      plan: "pro",
      timezone: "europe/berlin",
      budget: { monthly_usd: 50, mode: "hard", alert_at_percent: 80 },
    });
    expect(status).toBe(201);
    expect(body).toMatchObject({ timezone: "Europe/Berlin", budget: { monthly_usd: 50, mode: "hard", alert_at_percent: 80 } });
    const plain = await call("GET", `/admin/workspaces/${await workspace({ plan: "plus" })}`);
    expect(plain.body).toMatchObject({ timezone: "UTC", budget: null });
  });

  it.each([
    [{ timezone: "Mars/Olympus" }, "timezone"],
    [{ timezone: "+01:00" }, "timezone"],
    [{ budget: { monthly_usd: 0, mode: "hard" } }, "budget.monthly_usd"],
    [{ budget: { monthly_usd: 10.001, mode: "hard" } }, "budget.monthly_usd"],
    [{ budget: { monthly_usd: 10, mode: "strict" } }, "budget.mode"],
    [{ budget: { monthly_usd: 10, mode: "soft", alert_at_percent: 100 } }, "budget.alert_at_percent"],
    [{ budget: { monthly_usd: 10, mode: "soft", extra: 1 } }, "budget"],
  ])("when a workspace patch holds %j, then 400 naming %s and nothing changes", async (patch, param) => {
    const ws = await workspace({ plan: "plus", budget: { monthly_usd: 5, mode: "soft" } });
    const { status, body } = await call("PATCH", `/admin/workspaces/${ws}`, patch);
    expect(status).toBe(400);
    expect(body.error?.param).toBe(param);
    expect((await call("GET", `/admin/workspaces/${ws}`)).body).toMatchObject({ timezone: "UTC", budget: { monthly_usd: 5, mode: "soft" } });
    expect(published).toEqual([]);
  });

  it("when a workspace's budget is patched to null, then it is removed and the change is broadcast", async () => {
    const ws = await workspace({ plan: "plus", budget: { monthly_usd: 5, mode: "hard" } });
    const { status, body } = await call("PATCH", `/admin/workspaces/${ws}`, { budget: null, timezone: "Asia/Tokyo" });
    expect(status).toBe(200);
    expect(body).toMatchObject({ budget: null, timezone: "Asia/Tokyo" });
    expect(published).toContainEqual(expect.objectContaining({ kind: "workspace", id: ws }));
    // A patch that does not name the budget leaves it alone.
    await call("PATCH", `/admin/workspaces/${ws}`, { budget: { monthly_usd: 7.5, mode: "soft" } });
    expect((await call("PATCH", `/admin/workspaces/${ws}`, { name: "renamed" })).body).toMatchObject({ budget: { monthly_usd: 7.5, mode: "soft" } });
  });

  it("when a key's budget exceeds its workspace's, then 400 naming budget.monthly_usd; within it or with no workspace budget, stored", async () => {
    const ws = await workspace({ plan: "plus", budget: { monthly_usd: 50, mode: "hard" } });
    const refused = await call("POST", `/admin/workspaces/${ws}/keys`, { budget: { monthly_usd: 50.01, mode: "hard" } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ param: "budget.monthly_usd" });
    expect(refused.body.error?.message).toContain("workspace's 50");
    const id = await key(ws, { budget: { monthly_usd: 50, mode: "soft" } });
    const patched = await call("PATCH", `/admin/keys/${id}`, { budget: { monthly_usd: 60, mode: "hard" } });
    expect(patched.status).toBe(400);
    expect((await call("PATCH", `/admin/keys/${id}`, { budget: { monthly_usd: 20, mode: "hard" } })).body).toMatchObject({
      budget: { monthly_usd: 20, mode: "hard" },
    });
    expect((await call("PATCH", `/admin/keys/${id}`, { budget: null })).body).toMatchObject({ budget: null });
    const free = await workspace({ plan: "plus" });
    expect((await call("POST", `/admin/workspaces/${free}/keys`, { budget: { monthly_usd: 1000, mode: "hard" } })).status).toBe(201);
  });
});

describe("GET /admin/audit", () => {
  interface AuditPage {
    data: AuditRecord[];
    next_cursor: string | null;
  }
  const audit = async (query: string) => {
    const { status, body } = await call("GET", `/admin/audit?${query}`);
    expect(status, JSON.stringify(body)).toBe(200);
    return body as unknown as AuditPage;
  };

  it("when a workspace and its key are changed, then each change is a record, newest first, with before and after and no secret", async () => {
    const ws = await workspace({ plan: "pro" });
    await call("PATCH", `/admin/workspaces/${ws}`, { budget: { monthly_usd: 20, mode: "hard" }, plan: "enterprise" });
    const created = await call("POST", `/admin/workspaces/${ws}/keys`, { name: "k" });
    const keyId = created.body.id as string;
    await call("PATCH", `/admin/keys/${keyId}`, { status: "revoked" });
    const { data } = await audit(`workspace_id=${ws}`);
    expect(data.map((r) => r.action)).toEqual(["key.update", "key.create", "workspace.update", "workspace.create"]);
    expect(data.every((r) => r.actor === "admin-token" && r.workspace_id === ws)).toBe(true);
    const [revoked, keyMade, changed] = data;
    expect(revoked).toMatchObject({ target: { kind: "key", id: keyId }, before: { status: "active" }, after: { status: "revoked" } });
    expect(keyMade?.before).toBeNull();
    expect(changed).toMatchObject({ before: { plan: "pro", budget: null }, after: { plan: "enterprise", budget: { monthly_usd: 20, mode: "hard" } } });
    const text = JSON.stringify(data);
    expect(text).not.toContain("key_hash");
    expect(text).not.toContain(created.body.key as string);
  });

  it("when the trail is paged, then pages follow each other without a gap or a repeat, and from/to bound it", async () => {
    const ws = await workspace({ plan: "plus" });
    for (let i = 0; i < 5; i++) await call("PATCH", `/admin/workspaces/${ws}`, { name: `n${i}` });
    const first = await audit(`workspace_id=${ws}&limit=4`);
    expect(first.data).toHaveLength(4);
    expect(first.next_cursor).not.toBeNull();
    await call("PATCH", `/admin/workspaces/${ws}`, { name: "during" }); // newer: not on a later page
    const second = await audit(`workspace_id=${ws}&limit=4&cursor=${first.next_cursor}`);
    expect(second.data.map((r) => r.action)).toEqual(["workspace.update", "workspace.create"]);
    expect(second.next_cursor).toBeNull();
    const ids = [...first.data, ...second.data].map((r) => r.id);
    expect(new Set(ids).size).toBe(6);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await audit(`workspace_id=${ws}&from=${encodeURIComponent(future)}`)).data).toEqual([]);
    expect((await audit(`workspace_id=${ws}&to=${encodeURIComponent(future)}`)).data).toHaveLength(7);
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=abc", "limit"],
    ["cursor=x1", "cursor"],
    ["from=yesterday", "from"],
    ["from=2026-01-02&to=2026-01-01", "from"],
    ["nope=1", null],
  ])("when the query is %s, then 400 naming %s", async (query, param) => {
    const { status, body } = await call("GET", `/admin/audit?${query}`);
    expect(status).toBe(400);
    expect(body.error?.param ?? null).toBe(param);
  });
});

describe("a person acting through the console (x-gw-principal)", () => {
  const principals = consolePrincipals(internalSecret);
  const as = async (scope: string, method: string, path: string, body?: unknown, header?: string): Promise<Answer> => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        [principalHeader]: header ?? principals.sign({ user_id: "usr_alice", email: "alice@example.com", workspace_id: scope }),
        "content-type": "application/json",
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Answer["body"] };
  };

  it("when the person acts in their workspace, then the change is made, names them in the audit trail, and the key records its creator", async () => {
    const ws = await workspace({ plan: "enterprise" });
    expect((await as(ws, "PATCH", `/admin/workspaces/${ws}`, { name: "renamed" })).status).toBe(200);
    const created = await as(ws, "POST", `/admin/workspaces/${ws}/keys`, { name: "mine" });
    expect(created.status).toBe(201);
    expect(created.body.created_by).toBe("usr_alice");
    const audit = await as(ws, "GET", "/admin/audit");
    const records = audit.body.data as AuditRecord[];
    expect(records.map((r) => [r.action, r.actor])).toEqual([
      ["key.create", "alice@example.com"],
      ["workspace.update", "alice@example.com"],
      ["workspace.create", "admin-token"],
    ]);
  });

  it("when the person names another workspace or its key, then 404 as if it did not exist, and nothing changes", async () => {
    const mine = await workspace({ plan: "plus" });
    const theirs = await workspace({ plan: "plus", name: "theirs" });
    const theirKey = await key(theirs);
    expect((await as(mine, "GET", `/admin/workspaces/${theirs}`)).status).toBe(404);
    expect((await as(mine, "PATCH", `/admin/workspaces/${theirs}`, { name: "taken" })).status).toBe(404);
    expect((await as(mine, "GET", `/admin/workspaces/${theirs}/keys`)).status).toBe(404);
    expect((await as(mine, "POST", `/admin/workspaces/${theirs}/keys`, {})).status).toBe(404);
    expect((await as(mine, "PATCH", `/admin/keys/${theirKey}`, { status: "revoked" })).status).toBe(404);
    expect((await as(mine, "GET", `/admin/audit?workspace_id=${theirs}`)).status).toBe(404);
    expect((await call("GET", `/admin/workspaces/${theirs}`)).body.name).toBe("theirs");
    const keys = (await call("GET", `/admin/workspaces/${theirs}/keys`)).body.data as { status: string }[];
    expect(keys.map((k) => k.status)).toEqual(["active"]);
  });

  it("when a person of one workspace lists or creates workspaces, then 403; an operator (scope *) may", async () => {
    const mine = await workspace({ plan: "plus" });
    expect((await as(mine, "GET", "/admin/workspaces")).status).toBe(403);
    expect((await as(mine, "POST", "/admin/workspaces", { name: "x", plan: "plus" })).status).toBe(403);
    expect((await as("*", "GET", "/admin/workspaces")).status).toBe(200);
    expect((await as("*", "POST", "/admin/workspaces", { name: "x", plan: "plus" })).status).toBe(201);
  });

  it.each([
    ["a forged signature", () => `${principals.sign({ user_id: "u", email: "e", workspace_id: "*" }).split(".")[0]}.AAAA`],
    [
      "an identity header of the data plane",
      () => signIdentity({ workspace_id: "*", key_id: "admin", plan: "enterprise", models: [], tools: [] }, internalSecret),
    ],
    ["another secret", () => consolePrincipals("another-secret-0123456789abcdef").sign({ user_id: "u", email: "e", workspace_id: "*" })],
    ["an expired header", () => principals.sign({ user_id: "u", email: "e", workspace_id: "*" }, Date.now() - 120_000)],
  ])("when the header is %s, then 401", async (_name, header) => {
    expect((await as("*", "GET", "/admin/workspaces", undefined, header())).status).toBe(401);
  });
});

describe("a U+0000 (NUL) in an id, a query or a body, which Postgres's text cannot hold", () => {
  it("then each call is a 400 in the OpenAI envelope naming it, nothing is written, and the API goes on answering", async () => {
    const ws = await workspace({ plan: "pro" });
    const keyId = await key(ws);
    const calls: [string, string, unknown?][] = [
      ["GET", "/admin/workspaces/ws%00/keys"],
      ["PATCH", "/admin/workspaces/a%00b", { plan: "pro" }],
      ["POST", "/admin/workspaces/ws%00/keys", {}],
      ["PATCH", "/admin/keys/key%00", { status: "disabled" }],
      ["GET", "/admin/audit?workspace_id=%00"],
      ["POST", "/admin/workspaces", { name: "a\u0000b", plan: "pro" }],
      ["PATCH", `/admin/workspaces/${ws}`, { name: "\u0000" }],
      ["POST", `/admin/workspaces/${ws}/keys`, { name: "k\u0000" }],
      ["PATCH", `/admin/keys/${keyId}`, { name: "k\u0000" }],
    ];
    for (const [method, path, body] of calls) {
      const answer = await call(method, path, body);
      expect(answer.status, `${method} ${path}`).toBe(400);
      expect(answer.body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_request" });
      expect(answer.body.error?.message).toContain("U+0000");
    }
    const keys = await call("GET", `/admin/workspaces/${ws}/keys`);
    expect((keys.body.data as { id: string }[]).map((k) => k.id)).toEqual([keyId]);
    const audit = await call("GET", `/admin/audit?workspace_id=${ws}`);
    expect((audit.body.data as AuditRecord[]).map((r) => r.action)).toEqual(["key.create", "workspace.create"]);
    const renamed = await call("PATCH", `/admin/workspaces/${ws}`, { name: "renamed" });
    expect([renamed.status, renamed.body.name]).toEqual([200, "renamed"]);
  });
});
