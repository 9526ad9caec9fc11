import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNatsBus, removeNatsNamespace, type Bus } from "@gw/bus";
import { createPgDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { verifyIdentity } from "@gw/service-kit";
import { createTestDatabase, testNatsUrl, uniqueNamespace, type TestDatabase } from "@gw/testkit";
import { createIngressService, type IngressService } from "./service";
import { testIngressSettings } from "./testing/settings";

/**
 * Two ingress replicas on one real Postgres database and one NATS namespace, in front of a
 * recording backend: what crosses the door, and how fast a key change reaches the other replica.
 */
const secret = "int-test-internal-secret-0123456789";
const adminToken = "int-test-admin-token-0123456789";
const logger = createLogger({ service: "ingress-int", level: "silent" });

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}
let backend: Server;
let backendUrl: string;
const seen: Seen[] = [];

let database: TestDatabase;
const dbs: Db[] = [];
const buses: Bus[] = [];
const replicas: { service: IngressService; url: string; adminUrl: string }[] = [];

const testPlans = {
  plus: { requests_per_minute: 10_000, tokens_per_minute: 1_000_000 },
  pro: { requests_per_minute: 10_000, tokens_per_minute: 1_000_000 },
  enterprise: { requests_per_minute: 10_000, tokens_per_minute: 1_000_000 },
};

function ingressOn(db: Db, bus: Bus, backendsAt: string, keyCacheTtlMs: number): IngressService {
  return createIngressService({
    db,
    bus,
    logger,
    settings: testIngressSettings(
      { adminToken, internalSecret: secret, backendUrl: backendsAt, plans: testPlans },
      { bodyLimitBytes: 64 * 1024, keyCacheTtlMs },
    ),
  });
}

async function replica() {
  const db = createPgDb({ url: database.url });
  const bus = await createNatsBus({ url: natsUrl, secret, namespace, logger, name: "ingress-int" });
  dbs.push(db);
  buses.push(bus);
  // A long cache TTL: only the broadcast can make a change visible within the test.
  const service = ingressOn(db, bus, backendUrl, 60_000);
  const { url, adminUrl } = await service.start();
  replicas.push({ service, url, adminUrl });
  return { url, adminUrl };
}

let natsUrl: string;
let namespace: string;

beforeAll(async () => {
  backend = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(parts) });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((r) => backend.listen(0, "127.0.0.1", r));
  backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
  database = await createTestDatabase();
  natsUrl = await testNatsUrl();
  namespace = uniqueNamespace();
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.service.stop()));
  await Promise.all(buses.map((b) => b.close()));
  await Promise.all(dbs.map((d) => d.close()));
  await database?.drop();
  if (natsUrl) await removeNatsNamespace(natsUrl, namespace);
  await new Promise((r) => backend?.close(r));
});

const admin = async <T = Record<string, unknown>>(adminUrl: string, method: string, path: string, body?: unknown): Promise<T> => {
  const res = await fetch(`${adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
};

async function statusWithin(url: string, key: string, want: number, ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  let last = 0;
  while (Date.now() < deadline) {
    last = (await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status;
    if (last === want) return last;
    await new Promise((r) => setTimeout(r, 20));
  }
  return last;
}

describe("when two ingress replicas share Postgres and NATS", () => {
  it("then a key created on one works on the other, and its disable, enable and revoke reach the other within a second", async () => {
    const a = await replica();
    const b = await replica();
    const ws = await admin<{ id: string }>(a.adminUrl, "POST", "/admin/workspaces", { name: "int", plan: "plus" });
    const key = await admin<{ id: string; key: string }>(a.adminUrl, "POST", `/admin/workspaces/${ws.id}/keys`, {});
    expect(await statusWithin(b.url, key.key, 200, 1000)).toBe(200); // now cached on b for 60 s

    await admin(a.adminUrl, "PATCH", `/admin/keys/${key.id}`, { status: "disabled" });
    expect(await statusWithin(b.url, key.key, 403, 1000)).toBe(403);
    await admin(a.adminUrl, "PATCH", `/admin/keys/${key.id}`, { status: "active" });
    expect(await statusWithin(b.url, key.key, 200, 1000)).toBe(200);
    await admin(a.adminUrl, "PATCH", `/admin/keys/${key.id}`, { status: "revoked" });
    expect(await statusWithin(b.url, key.key, 401, 1000)).toBe(401);
  });

  it("then canceling the workspace's subscription on one replica is a 403 on the other within a second", async () => {
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const ws = await admin<{ id: string }>(a.adminUrl, "POST", "/admin/workspaces", { name: "cancel-me", plan: "pro" });
    const key = await admin<{ key: string }>(a.adminUrl, "POST", `/admin/workspaces/${ws.id}/keys`, {});
    expect(await statusWithin(b.url, key.key, 200, 1000)).toBe(200);
    await admin(a.adminUrl, "PATCH", `/admin/workspaces/${ws.id}`, { subscription: "canceled" });
    expect(await statusWithin(b.url, key.key, 403, 1000)).toBe(403);
  });
});

describe("when ingress forwards a request", () => {
  it("then the backend gets the exact body, a verifiable identity and a request id, and never the caller's key or internal headers", async () => {
    const { url, adminUrl } = replicas[0] as (typeof replicas)[0];
    const ws = await admin<{ id: string }>(adminUrl, "POST", "/admin/workspaces", { name: "fwd", plan: "enterprise", models: ["m-*"], tools: ["webtool"] });
    const key = await admin<{ id: string; key: string }>(adminUrl, "POST", `/admin/workspaces/${ws.id}/keys`, { models: ["m-1"] });
    const body = '{"model":"m-1",  "messages":[{"role":"user","content":"héllo"}]}';
    seen.length = 0;
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key.key}`,
        "x-api-key": key.key,
        "content-type": "application/json",
        "x-gw-identity": "forged",
        "x-gw-route": "evil",
      },
      body,
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get("x-request-id");
    const got = seen[0] as Seen;
    expect(got.body.toString("utf8")).toBe(body);
    expect(got.url).toBe("/v1/chat/completions");
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers["x-api-key"]).toBeUndefined();
    expect(got.headers["x-gw-route"]).toBeUndefined();
    expect(got.headers["x-request-id"]).toBe(requestId);
    const identity = verifyIdentity(got.headers["x-gw-identity"] as string, secret);
    expect(identity).toEqual({ workspace_id: ws.id, key_id: key.id, plan: "enterprise", models: [["m-*"], ["m-1"]], tools: ["webtool"] });
  });

  it("then a model outside the allow-lists, a tool not enabled, a body over the limit and an unknown route never reach the backend", async () => {
    const { url, adminUrl } = replicas[0] as (typeof replicas)[0];
    const ws = await admin<{ id: string }>(adminUrl, "POST", "/admin/workspaces", { name: "deny", plan: "pro", models: ["ok-*"], tools: [] });
    const key = (await admin<{ key: string }>(adminUrl, "POST", `/admin/workspaces/${ws.id}/keys`, {})).key;
    const post = (path: string, body: string) =>
      fetch(`${url}${path}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
    seen.length = 0;
    const model = await post("/v1/chat/completions", '{"model":"nope","messages":[]}');
    expect(model.status).toBe(403);
    expect(await model.json()).toMatchObject({ error: { code: "model_not_allowed", param: "model" } });
    const msgs = await post("/v1/messages", '{"model":"nope","max_tokens":5,"messages":[]}');
    expect(msgs.status).toBe(403);
    expect(await msgs.json()).toMatchObject({ type: "error", error: { type: "permission_error" } });
    expect((await post("/v1/tools/webtool/search", '{"query":"x"}')).status).toBe(403);
    expect((await post("/v1/chat/completions", JSON.stringify({ model: "ok-1", pad: "x".repeat(70 * 1024) }))).status).toBe(413);
    expect((await post("/v1/nowhere", "{}")).status).toBe(404);
    expect(seen).toHaveLength(0);
  });

  it("then a backend that is down is a 503 in the route's envelope, not a hang or a 500", async () => {
    const { adminUrl } = replicas[0] as (typeof replicas)[0];
    const ws = await admin<{ id: string }>(adminUrl, "POST", "/admin/workspaces", { name: "down", plan: "pro" });
    const key = (await admin<{ key: string }>(adminUrl, "POST", `/admin/workspaces/${ws.id}/keys`, {})).key;
    // Port 1 (tcpmux), where nothing listens: a port freed by a closed server could be taken by
    // another test file's server meanwhile, and answer (a 404 once in CI).
    const deadUrl = "http://127.0.0.1:1";
    const db = createPgDb({ url: database.url });
    dbs.push(db);
    const bus = buses[0] as Bus;
    const lonely = ingressOn(db, bus, deadUrl, 1000);
    const { url } = await lonely.start();
    try {
      const res = await fetch(`${url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: '{"model":"x","max_tokens":1,"messages":[]}',
      });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    } finally {
      await lonely.stop();
    }
  });
});
