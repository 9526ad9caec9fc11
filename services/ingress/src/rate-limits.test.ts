import { createServer, request, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import type { PlanLimitsTable } from "@gw/config";
import { internalHeaders } from "@gw/contracts";
import { createPgliteDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { createIngressService, type IngressService, type RateLimitSettings } from "./service";
import { memoryRateLimits, testIngressSettings } from "./testing/settings";

/**
 * Ingress's rate limiting in front of a backend that speaks the internal usage protocol (a header
 * on JSON answers, a trailer on streams), on PGlite and the in-process bus: headers, 429s in both
 * envelopes, settling reservations, and failing open or closed when Redis is unreachable.
 */
const adminToken = "rate-limit-test-admin-token";
const logger = createLogger({ service: "rate-limit-test", level: "silent" });
const plans: PlanLimitsTable = {
  plus: { requests_per_minute: 5, tokens_per_minute: 10_000 },
  pro: { requests_per_minute: 100, tokens_per_minute: 100_000 },
  enterprise: { requests_per_minute: 1000, tokens_per_minute: 1_000_000 },
};

let db: Db;
let bus: Bus;
let backend: Server;
let backendUrl: string;
let backendCalls = 0;
const services: IngressService[] = [];

/**
 * The backend answers as its body asks: `usage` tokens reported (in its usage header or trailer, or
 * with `inOutcome` as the total in its outcome, as inference reports them), `stream`, or a `fail` status.
 */
function startBackend(): Promise<void> {
  backend = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      backendCalls++;
      const body = parts.length
        ? (JSON.parse(Buffer.concat(parts).toString()) as { usage?: number; stream?: boolean; fail?: number; inOutcome?: boolean })
        : {};
      const name = body.inOutcome ? internalHeaders.outcome : internalHeaders.usageTokens;
      const value = body.inOutcome ? `p=up&a=1&in=1&out=2&t=${body.usage}` : String(body.usage);
      res.setHeader("x-gw-internal-note", "must not leak");
      if (body.fail) {
        res.statusCode = body.fail;
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ error: { message: "failed", type: "server_error", param: null, code: "upstream_error" } }));
        return;
      }
      if (body.stream) {
        res.setHeader("content-type", "text/event-stream");
        res.setHeader("trailer", `${internalHeaders.usageTokens}, ${internalHeaders.outcome}`);
        res.write('data: {"n":1}\n\n');
        res.write("data: [DONE]\n\n");
        if (body.usage !== undefined) res.addTrailers({ [name]: value });
        res.end();
        return;
      }
      res.setHeader("content-type", "application/json");
      if (body.usage !== undefined) res.setHeader(name, value);
      res.end(JSON.stringify({ ok: true }));
    });
  });
  return new Promise((r) =>
    backend.listen(0, "127.0.0.1", () => {
      backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
      r();
    }),
  );
}

async function startIngress(rateLimits: RateLimitSettings = memoryRateLimits) {
  const service = createIngressService({
    db,
    bus,
    logger,
    settings: testIngressSettings({ adminToken, internalSecret: "rate-limit-test-internal-secret", backendUrl, plans }, { rateLimits }),
  });
  services.push(service);
  return service.start();
}

let gw: { url: string; adminUrl: string };

beforeAll(async () => {
  db = await createPgliteDb();
  bus = createInProcessBus({ logger });
  await startBackend();
  gw = await startIngress();
}, 60_000);

afterAll(async () => {
  for (const s of services) await s.stop();
  await bus?.close();
  await db?.close();
  await new Promise((r) => backend?.close(r));
});

async function admin<T = { id: string; key: string }>(method: string, path: string, body?: unknown, adminUrl = gw.adminUrl): Promise<T> {
  const res = await fetch(`${adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function newKey(plan: keyof PlanLimitsTable, keyLimits?: object, adminUrl = gw.adminUrl) {
  const ws = await admin("POST", "/admin/workspaces", { name: "limits", plan }, adminUrl);
  const key = await admin("POST", `/admin/workspaces/${ws.id}/keys`, keyLimits ? { limits: keyLimits } : {}, adminUrl);
  return { workspaceId: ws.id, keyId: key.id, key: key.key };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  body: string;
}

/** A raw HTTP call, so headers and trailers are seen exactly as sent. */
function call(base: string, key: string, path: string, body?: object, method = "POST"): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, body: Buffer.concat(parts).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

const chat = (extra: object = {}) => ({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 100, ...extra });
const rateHeaders = [
  "x-ratelimit-limit-requests",
  "x-ratelimit-remaining-requests",
  "x-ratelimit-reset-requests",
  "x-ratelimit-limit-tokens",
  "x-ratelimit-remaining-tokens",
  "x-ratelimit-reset-tokens",
];

describe("when a key is within its limits", () => {
  it("then a JSON answer carries the six x-ratelimit headers and no internal header", async () => {
    const { key } = await newKey("plus");
    const a = await call(gw.url, key, "/v1/chat/completions", chat({ usage: 40 }));
    expect(a.status).toBe(200);
    for (const name of rateHeaders) expect(a.headers[name], name).toBeDefined();
    expect(a.headers["x-ratelimit-limit-requests"]).toBe("5");
    expect(a.headers["x-ratelimit-remaining-requests"]).toBe("4");
    expect(a.headers["x-ratelimit-reset-requests"]).toMatch(/^(\d+m)?\d+(\.\d+)?s$|^\d+ms$/);
    expect(a.headers["x-ratelimit-limit-tokens"]).toBe("10000");
    expect(Number(a.headers["x-ratelimit-remaining-tokens"])).toBeLessThan(10_000 - 100);
    expect(Object.keys(a.headers).filter((h) => h.startsWith("x-gw-"))).toEqual([]);
  });

  it("then the next answer's remaining tokens count the reported usage, not the reservation", async () => {
    const { key } = await newKey("plus");
    const first = await call(gw.url, key, "/v1/chat/completions", chat({ usage: 40 }));
    const reserved = 10_000 - Number(first.headers["x-ratelimit-remaining-tokens"]);
    expect(reserved).toBeGreaterThan(100); // max_tokens plus the prompt
    await new Promise((r) => setTimeout(r, 20)); // settling runs once the answer is complete
    const second = await call(gw.url, key, "/v1/chat/completions", chat({ usage: 40 }));
    expect(Number(second.headers["x-ratelimit-remaining-tokens"])).toBe(10_000 - 40 - reserved);
  });

  it("then a stream's usage trailer settles the reservation, and the client sees neither trailer nor its announcement", async () => {
    const { key } = await newKey("plus");
    const first = await call(gw.url, key, "/v1/chat/completions", chat({ stream: true, usage: 7 }));
    expect(first.status).toBe(200);
    expect(first.body).toContain("[DONE]");
    for (const name of rateHeaders) expect(first.headers[name], name).toBeDefined();
    expect(first.headers.trailer).toBeUndefined();
    expect(first.trailers).toEqual({});
    const reserved = 10_000 - Number(first.headers["x-ratelimit-remaining-tokens"]);
    await new Promise((r) => setTimeout(r, 20));
    const second = await call(gw.url, key, "/v1/chat/completions", chat({ stream: true, usage: 7 }));
    expect(Number(second.headers["x-ratelimit-remaining-tokens"])).toBe(10_000 - 7 - reserved);
  });

  it.each([false, true])("then the total a backend reports in its outcome settles the reservation (streamed: %s)", async (stream) => {
    const { key } = await newKey("plus");
    const first = await call(gw.url, key, "/v1/chat/completions", chat({ stream, usage: 13, inOutcome: true }));
    expect(first.status).toBe(200);
    expect(Object.keys({ ...first.headers, ...first.trailers }).filter((h) => h.startsWith("x-gw-"))).toEqual([]);
    const reserved = 10_000 - Number(first.headers["x-ratelimit-remaining-tokens"]);
    await new Promise((r) => setTimeout(r, 20));
    const second = await call(gw.url, key, "/v1/chat/completions", chat({ stream, usage: 13, inOutcome: true }));
    expect(Number(second.headers["x-ratelimit-remaining-tokens"])).toBe(10_000 - 13 - reserved);
  });

  it("then a failed call with no usage gives its whole reservation back", async () => {
    const { key } = await newKey("plus");
    const failed = await call(gw.url, key, "/v1/chat/completions", chat({ fail: 502 }));
    expect(failed.status).toBe(502);
    expect(failed.headers["x-ratelimit-remaining-requests"]).toBe("4");
    const reserved = 10_000 - Number(failed.headers["x-ratelimit-remaining-tokens"]);
    await new Promise((r) => setTimeout(r, 20));
    const next = await call(gw.url, key, "/v1/chat/completions", chat({ usage: 1 }));
    expect(Number(next.headers["x-ratelimit-remaining-tokens"])).toBe(10_000 - reserved);
  });
});

describe("when a key exceeds its limits", () => {
  it("then the request over the key's limit is a 429 naming the key's RPM, with retry-after, and never reaches the backend", async () => {
    const { key } = await newKey("plus", { requests_per_minute: 2 });
    expect((await call(gw.url, key, "/v1/chat/completions", chat())).status).toBe(200);
    expect((await call(gw.url, key, "/v1/chat/completions", chat())).status).toBe(200);
    const before = backendCalls;
    const denied = await call(gw.url, key, "/v1/chat/completions", chat());
    expect(backendCalls).toBe(before);
    expect(denied.status).toBe(429);
    const retryAfter = Number(denied.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(59);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(Number(denied.headers["retry-after-ms"])).toBeGreaterThan(58_000);
    expect(denied.headers["x-ratelimit-remaining-requests"]).toBe("0");
    expect(denied.headers["x-ratelimit-limit-requests"]).toBe("2");
    const { error } = JSON.parse(denied.body) as { error: { message: string; type: string; code: string; param: null } };
    expect(error).toMatchObject({ type: "requests", code: "rate_limit_exceeded", param: null });
    expect(error.message).toMatch(/requests per minute \(RPM\) on this API key: limit 2, used 2, requested 1/);
  });

  it("then the workspace's limit binds all its keys, and the 429 says so", async () => {
    const { workspaceId, key } = await newKey("plus");
    const other = await admin("POST", `/admin/workspaces/${workspaceId}/keys`, {});
    for (let i = 0; i < 5; i++) expect((await call(gw.url, i % 2 ? key : other.key, "/v1/chat/completions", chat())).status).toBe(200);
    const denied = await call(gw.url, other.key, "/v1/chat/completions", chat());
    expect(denied.status).toBe(429);
    expect(denied.body).toContain("on this workspace: limit 5, used 5");
  });

  it("then /v1/messages answers the 429 in the Anthropic envelope", async () => {
    const { key } = await newKey("plus", { requests_per_minute: 1 });
    await call(gw.url, key, "/v1/messages", { model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    const denied = await call(gw.url, key, "/v1/messages", { model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    expect(denied.status).toBe(429);
    expect(denied.headers["retry-after"]).toBeDefined();
    expect(JSON.parse(denied.body)).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
  });

  it("then a request whose estimate alone exceeds the token limit is a 429 that tells the SDKs not to retry", async () => {
    const { key } = await newKey("plus", { tokens_per_minute: 500 });
    const before = backendCalls;
    const denied = await call(gw.url, key, "/v1/chat/completions", chat({ max_tokens: 1000 }));
    expect(backendCalls).toBe(before);
    expect(denied.status).toBe(429);
    expect(denied.headers["x-should-retry"]).toBe("false");
    expect(denied.headers["retry-after"]).toBeUndefined();
    const { error } = JSON.parse(denied.body) as { error: { message: string; type: string } };
    expect(error.type).toBe("tokens");
    expect(error.message).toMatch(/^Request too large for tokens per minute \(TPM\) on this API key: limit 500/);
  });

  it("then reads are not counted: the model list and job polls still answer", async () => {
    const { key } = await newKey("plus", { requests_per_minute: 1 });
    await call(gw.url, key, "/v1/chat/completions", chat());
    expect((await call(gw.url, key, "/v1/chat/completions", chat())).status).toBe(429);
    const models = await call(gw.url, key, "/v1/models", undefined, "GET");
    expect(models.status).toBe(200);
    expect(models.headers["x-ratelimit-limit-requests"]).toBeUndefined();
    expect((await call(gw.url, key, "/v1/async/chat/completions/job_x", undefined, "GET")).status).toBe(200);
    expect((await call(gw.url, key, "/v1/async/chat/completions", chat())).status).toBe(429);
  });

  it("then raising the workspace's plan lifts the limit at once", async () => {
    const { workspaceId, key } = await newKey("plus");
    for (let i = 0; i < 5; i++) await call(gw.url, key, "/v1/chat/completions", chat());
    expect((await call(gw.url, key, "/v1/chat/completions", chat())).status).toBe(429);
    await admin("PATCH", `/admin/workspaces/${workspaceId}`, { plan: "pro" });
    const after = await call(gw.url, key, "/v1/chat/completions", chat());
    expect(after.status).toBe(200);
    expect(after.headers["x-ratelimit-limit-requests"]).toBe("100");
  });
});

describe("when Redis is unreachable", () => {
  const unreachable = { redisUrl: "redis://127.0.0.1:1", prefix: "gwt:", windowMs: 60_000, timeoutMs: 200 };

  it("then by default requests are served without limits, and a metric counts them", async () => {
    const open = await startIngress({ ...unreachable, failureMode: "open" });
    const { key } = await newKey("plus", { requests_per_minute: 1 }, open.adminUrl);
    for (let i = 0; i < 3; i++) {
      const a = await call(open.url, key, "/v1/chat/completions", chat());
      expect(a.status).toBe(200);
      expect(a.headers["x-ratelimit-limit-requests"]).toBeUndefined();
    }
    expect((await fetch(`${open.url}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${open.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/gw_ratelimit_unavailable_total\{mode="open",service="ingress"\} 3/);
  });

  it("then, configured to fail closed, requests get a 503 in the route's envelope and ingress is not ready", async () => {
    const closed = await startIngress({ ...unreachable, failureMode: "closed" });
    const { key } = await newKey("plus", undefined, closed.adminUrl);
    const before = backendCalls;
    const a = await call(closed.url, key, "/v1/chat/completions", chat());
    expect(a.status).toBe(503);
    expect(JSON.parse(a.body)).toMatchObject({ error: { code: "upstream_unavailable", type: "server_error" } });
    const m = await call(closed.url, key, "/v1/messages", chat());
    expect(JSON.parse(m.body)).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    expect(backendCalls).toBe(before);
    expect((await fetch(`${closed.url}/readyz`)).status).toBe(503);
  });
});
