import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIUpstream, startTcpProxy, testRedisUrl, type TcpProxy } from "@gw/testkit";
import { adminClient, eventually, startIngressReplica, startTestMesh, type IngressReplica, type RunningMesh } from "./harness";

/**
 * Rate limits held across two ingress processes sharing one Redis (reached through a relay the test
 * can cut), in front of the rest of the mesh and an emulated OpenAI upstream.
 */
const UPSTREAM_KEY = "sk-upstream-rate-limits";

let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let redis: TcpProxy;
let gw: RunningMesh;
let second: IngressReplica;
let admin: ReturnType<typeof adminClient>;
let bases: [string, string];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY, chunkDelayMs: 3 });
  const target = new URL(await testRedisUrl());
  redis = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
  gw = await startTestMesh(
    `
providers:
  primary: { kind: openai, base_url: "${upstream.url}", api_key_env: E2E_UPSTREAM_KEY, timeout_ms: 10000 }
models:
  chat-limits: { type: chat, routes: [{ provider: primary, model: gpt-4o-mini }] }
plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`,
    // A generous limiter time limit: a test machine busy with other suites must not make a slow Redis
    // answer count as Redis being down (that fails open, and exactness is what is measured here).
    { E2E_UPSTREAM_KEY: UPSTREAM_KEY, REDIS_URL: `redis://127.0.0.1:${redis.port}`, LOG_LEVEL: "warn", GATEWAY_RATE_LIMIT_TIMEOUT_MS: "5000" },
  );
  second = await startIngressReplica(gw);
  admin = adminClient(gw.adminURL, gw.adminToken);
  bases = [gw.baseURL, second.baseURL];
}, 180_000);

afterAll(async () => {
  const code = await second?.stop();
  const codes = await gw?.stop();
  await upstream?.close();
  await redis?.close();
  if (codes) expect({ ...codes, second: code }).toEqual({ inference: 0, tools: 0, jobs: 0, usage: 0, console: 0, ingress: 0, second: 0 });
});

async function workspaceKey(body: Record<string, unknown>): Promise<{ workspaceId: string; keyId: string; key: string }> {
  const ws = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "limits", plan: "pro", ...body });
  const key = await admin<{ id: string; key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, {});
  return { workspaceId: ws.id, keyId: key.id, key: key.key };
}

const chatBody = (content = "hello there") => ({ model: "chat-limits", messages: [{ role: "user" as const, content }] });

function post(base: string, key: string, body: unknown): Promise<Response> {
  return fetch(`${base}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

const rateHeaderNames = ["requests", "tokens"].flatMap((d) => ["limit", "remaining", "reset"].map((k) => `x-ratelimit-${k}-${d}`));

describe("when two ingress processes share Redis", () => {
  it("then 500 concurrent requests at a limit of 50 admit exactly 50", async () => {
    const { key } = await workspaceKey({ limits: { requests_per_minute: 50 } });
    const before = upstream.requests.length;
    const answers = await Promise.all(
      Array.from({ length: 500 }, async (_, i) => {
        const res = await post(bases[i % 2] as string, key, chatBody());
        await res.arrayBuffer();
        return res.status;
      }),
    );
    const count = (s: number) => answers.filter((a) => a === s).length;
    expect({ admitted: count(200), limited: count(429) }).toEqual({ admitted: 50, limited: 450 });
    expect(upstream.requests.length - before).toBe(50);
  });

  it("then the token limit holds within 5% under concurrent streaming requests on both", async () => {
    const limit = 20_000;
    const { key } = await workspaceKey({ limits: { requests_per_minute: 100_000, tokens_per_minute: limit } });
    const prompt = Array.from({ length: 30 }, (_, i) => `word${i % 10}`).join(" ");
    let admittedTokens = 0;
    let admitted = 0;
    const worker = async (base: string) => {
      const client = new OpenAI({ apiKey: key, baseURL: base, maxRetries: 0 });
      let denials = 0;
      while (denials < 8) {
        try {
          const stream = await client.chat.completions.create({
            ...chatBody(prompt),
            max_tokens: 40,
            stream: true,
            stream_options: { include_usage: true },
          });
          let total = 0;
          for await (const chunk of stream) total = chunk.usage?.total_tokens ?? total;
          expect(total).toBeGreaterThan(0);
          admittedTokens += total;
          admitted++;
          denials = 0;
        } catch (err) {
          if (!(err instanceof OpenAI.RateLimitError)) throw err;
          denials++;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, i) => worker(bases[i % 2] as string)));
    expect(admitted).toBeGreaterThan(100);
    expect(admittedTokens).toBeGreaterThanOrEqual(limit * 0.95);
    expect(admittedTokens).toBeLessThanOrEqual(limit * 1.05);
  });

  it("then plain and streamed answers carry the six x-ratelimit headers on both replicas", async () => {
    const { key } = await workspaceKey({ limits: { requests_per_minute: 40, tokens_per_minute: 50_000 } });
    for (const base of bases) {
      const client = new OpenAI({ apiKey: key, baseURL: base, maxRetries: 0 });
      const plain = await client.chat.completions.create(chatBody()).withResponse();
      const stream = await client.chat.completions.create({ ...chatBody(), stream: true }).withResponse();
      for await (const _ of stream.data) {
        // drain
      }
      for (const { response } of [plain, stream]) {
        for (const name of rateHeaderNames) expect(response.headers.get(name), name).toMatch(/^\d|ms$|s$/);
        expect(response.headers.get("x-ratelimit-limit-requests")).toBe("40");
        expect(response.headers.get("x-ratelimit-limit-tokens")).toBe("50000");
      }
    }
    // Four requests so far, counted once across both replicas.
    const last = await post(bases[1], key, chatBody());
    expect(last.headers.get("x-ratelimit-remaining-requests")).toBe("35");
  });

  it("then a 429 from either replica carries retry-after and the OpenAI envelope naming the limit", async () => {
    const { key } = await workspaceKey({ limits: { requests_per_minute: 2 } });
    await post(bases[0], key, chatBody());
    await post(bases[1], key, chatBody());
    for (const base of bases) {
      const res = await post(base, key, chatBody());
      expect(res.status).toBe(429);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("0");
      expect(await res.json()).toMatchObject({
        error: { type: "requests", code: "rate_limit_exceeded", message: expect.stringMatching(/on this workspace: limit 2, used 2/) },
      });
    }
  });

  it("then disable, enable, revoke, a plan change and a canceled subscription made on one are seen by the other within a second", async () => {
    const { workspaceId, keyId, key } = await workspaceKey({ plan: "plus" });
    const onSecond = () => post(bases[1], key, chatBody());
    const within = async (check: (res: Response) => boolean | Promise<boolean>) => {
      const started = Date.now();
      await eventually(async () => check(await onSecond()), 1_000);
      return Date.now() - started;
    };
    expect((await onSecond()).headers.get("x-ratelimit-limit-requests")).toBe("60"); // cached on the second replica
    await admin("PATCH", `/admin/keys/${keyId}`, { status: "disabled" });
    expect(await within((r) => r.status === 403)).toBeLessThan(1_000);
    await admin("PATCH", `/admin/keys/${keyId}`, { status: "active" });
    expect(await within((r) => r.status === 200)).toBeLessThan(1_000);
    await admin("PATCH", `/admin/workspaces/${workspaceId}`, { plan: "enterprise" });
    expect(await within((r) => r.headers.get("x-ratelimit-limit-requests") === "6000")).toBeLessThan(1_000);
    await admin("PATCH", `/admin/workspaces/${workspaceId}`, { subscription: "canceled" });
    expect(await within((r) => r.status === 403)).toBeLessThan(1_000);
    await admin("PATCH", `/admin/workspaces/${workspaceId}`, { subscription: "active" });
    expect(await within((r) => r.status === 200)).toBeLessThan(1_000);
    await admin("PATCH", `/admin/keys/${keyId}`, { status: "revoked" });
    expect(await within((r) => r.status === 401)).toBeLessThan(1_000);
  });

  it("then with Redis gone both keep serving without limits, say so, still authenticate new keys, and limit again once it is back", async () => {
    const { key } = await workspaceKey({ limits: { requests_per_minute: 1 } });
    expect((await post(bases[0], key, chatBody())).status).toBe(200);
    expect((await post(bases[1], key, chatBody())).status).toBe(429);

    await redis.cut();
    try {
      const fresh = await workspaceKey({ limits: { requests_per_minute: 1 } }); // never seen: read from Postgres
      for (const base of bases) {
        for (const k of [key, fresh.key]) {
          const res = await post(base, k, chatBody());
          expect(res.status).toBe(200);
          expect(res.headers.get("x-ratelimit-limit-requests")).toBeNull();
        }
      }
      const metrics = await (await fetch(`${gw.adminURL}/metrics`)).text();
      expect(metrics).toMatch(/gw_ratelimit_unavailable_total\{mode="open",service="ingress"\} [1-9]/);
      await eventually(() => (gw.output() + second.output()).includes("rate limiter unreachable; serving without limits"), 3_000);
      expect((await fetch(`${bases[1].replace(/\/v1$/, "")}/readyz`)).status).toBe(200);
    } finally {
      await redis.restore();
    }
    // The client reconnects in the background; the key's window still holds its earlier request.
    await eventually(async () => (await post(bases[1], key, chatBody())).status === 429, 10_000);
    await eventually(async () => (await post(bases[0], key, chatBody())).status === 429, 10_000);
  });
});
