import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import { createPgliteDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { createIngressService, type IngressService } from "../service";
import { testIngressSettings } from "../testing/settings";

/**
 * The failure budget per client address at the front door: ingress on PGlite and the in-process
 * bus, a backend that answers 200, and requests from 127.0.0.1.
 */
const adminToken = "auth-guard-test-admin-token";
const logger = createLogger({ service: "auth-guard-test", level: "silent" });
const limits = { requests_per_minute: 1000, tokens_per_minute: 1_000_000 };

let db: Db;
let bus: Bus;
let backend: Server;
let service: IngressService;
let gw: { url: string; adminUrl: string };

beforeAll(async () => {
  db = await createPgliteDb();
  bus = createInProcessBus({ logger });
  backend = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.setHeader("content-type", "application/json").end('{"ok":true}'));
  });
  await new Promise<void>((r) => backend.listen(0, "127.0.0.1", r));
  const backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
  service = createIngressService({
    db,
    bus,
    logger,
    settings: testIngressSettings(
      { adminToken, internalSecret: "auth-guard-test-internal-secret", backendUrl, plans: { plus: limits, pro: limits, enterprise: limits } },
      { authGuard: { failuresPerMinute: 3, trackedAddresses: 100, lookupConcurrency: 2, lookupQueue: 10, unknownKeyCacheSize: 100 } },
    ),
  });
  gw = await service.start();
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await bus?.close();
  await db?.close();
  await new Promise((r) => backend?.close(r));
});

async function newKey(): Promise<string> {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${gw.adminUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return (await res.json()) as { id: string; key: string };
  };
  const ws = await post("/admin/workspaces", { name: "guard", plan: "pro" });
  return (await post(`/admin/workspaces/${ws.id}/keys`, {})).key;
}

const send = (path: string, key?: string) =>
  fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
  });

describe("when one address keeps failing to authenticate", () => {
  it("then past its budget it gets 429 with retry-after in each route's envelope, while a key it already used still works", async () => {
    const known = await newKey();
    expect((await send("/v1/chat/completions", known)).status).toBe(200); // now cached
    const fresh = await newKey(); // valid, but never seen by this replica

    expect((await send("/v1/chat/completions")).status).toBe(401);
    expect((await send("/v1/messages", "gw_live_short")).status).toBe(401);
    expect((await send("/v1/messages", `gw_live_${"Q".repeat(40)}`)).status).toBe(401);

    const openai = await send("/v1/chat/completions", `gw_live_${"R".repeat(40)}`);
    expect(openai.status).toBe(429);
    expect(Number(openai.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await openai.json()).toMatchObject({ error: { type: "rate_limit_error", code: "too_many_auth_failures" } });

    const anthropic = await send("/v1/messages");
    expect(anthropic.status).toBe(429);
    expect(anthropic.headers.get("retry-after")).toBeTruthy();
    expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });

    expect((await send("/v1/messages", fresh)).status).toBe(429); // not cached: it waits like any other
    expect((await send("/v1/chat/completions", known)).status).toBe(200); // a shared NAT keeps its customers
  });
});
