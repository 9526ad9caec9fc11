import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import { usageRecordsOf } from "@gw/contracts";
import { GatewayConfig, type PlanLimitsTable } from "@gw/config";
import { createPgliteDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { createIngressService, type IngressService } from "./service";
import { testIngressSettings } from "./testing/settings";

/**
 * A caller that leaves while its request is being admitted (here: while the budget's counter is
 * seeded from the ledger, held until the caller has gone): its close is past before the request
 * would go on, so ingress must see that it has, send nothing to the backend, and give back what the
 * request was charged.
 */
const adminToken = "caller-gone-test-admin-token-0123";
const SECRET = "caller-gone-test-internal-secret-0123456789";
const logger = createLogger({ service: "caller-gone-test", level: "silent" });
const limits = { requests_per_minute: 1_000, tokens_per_minute: 1_000_000 };
const plans: PlanLimitsTable = { plus: limits, pro: limits, enterprise: limits };
const gateway = GatewayConfig.parse({
  providers: { openai: { kind: "openai", base_url: "http://127.0.0.1:9/v1" } },
  models: { gpt: { type: "chat", routes: [{ provider: "openai", model: "gpt-4o-mini" }], price: { input_per_mtok: 1000, output_per_mtok: 1000 } } },
  plans,
});

let db: Db;
let bus: Bus;
let backend: Server;
let ledger: Server;
let service: IngressService;
let gw: { url: string; adminUrl: string };
const forwarded: string[] = [];
const records: { status: number }[] = [];
/** The ledger's month-to-date answers wait for this; `asked` resolves when one is waiting. */
let release!: () => void;
let asked!: Promise<void>;

beforeAll(async () => {
  db = await createPgliteDb();
  bus = createInProcessBus({ logger });
  await bus.consume("usage.records", { durable: "usage" }, async (message) => void records.push(...(usageRecordsOf(message) as { status: number }[])));
  backend = createServer((req, res) => {
    forwarded.push(req.url ?? "");
    res.setHeader("content-type", "application/json");
    res.end("{}");
  });
  let noteAsked!: () => void;
  asked = new Promise((resolve) => (noteAsked = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  ledger = createServer((_req, res) => {
    noteAsked();
    void released.then(() => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ object: "list", data: [] }));
    });
  });
  const listen = async (server: Server) => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const backendUrl = await listen(backend);
  service = createIngressService({
    db,
    bus,
    logger,
    settings: testIngressSettings({ adminToken, internalSecret: SECRET, backendUrl, plans }, { usageUrl: await listen(ledger), gateway }),
  });
  gw = await service.start();
}, 60_000);
afterAll(async () => {
  release?.();
  await service?.stop();
  await bus?.close();
  await db?.close();
  await Promise.all([backend, ledger].map((s) => new Promise((r) => s?.close(r))));
});

async function admin<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${gw.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

describe("when a caller leaves while its request is being admitted", () => {
  it("then nothing reaches the backend and its budget hold is given back", async () => {
    const ws = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "gone", plan: "pro", budget: { monthly_usd: 100, mode: "hard" } });
    const { key } = await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, {});
    const body = JSON.stringify({ model: "gpt", max_tokens: 100, messages: [{ role: "user", content: "are you there?" }] });
    const { port } = new URL(gw.url);
    const sent = request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/v1/chat/completions",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
    });
    sent.on("error", () => {});
    sent.end(body);
    await asked;
    sent.destroy();
    // The request is recorded as ended by its caller once ingress has seen the connection close.
    await expect.poll(() => records.map((r) => r.status), { timeout: 10_000 }).toEqual([499]);
    release();
    const budget = async () =>
      (await admin<{ workspace: { spent_usd: string | null; held_usd: string | null } }>("GET", `/admin/workspaces/${ws.id}/budget`)).workspace;
    // Seeded and held, then given back: the counter exists and holds nothing.
    await expect.poll(budget, { timeout: 10_000 }).toEqual(expect.objectContaining({ spent_usd: "0.000000000", held_usd: "0.000000000" }));
    expect(forwarded).toEqual([]);
  });
});
