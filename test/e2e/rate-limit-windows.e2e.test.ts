import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIUpstream } from "@gw/testkit";
import { adminClient } from "./harness";
import { startGatewayTarget, testPlans, type GatewayTarget } from "./targets";

/**
 * The same rate-limit behaviour from the mesh (Redis limiter) and the embedded default (in-memory
 * limiter), on a 6-second window: short enough for a client to wait one out, long enough that a
 * burst of 100 requests on a busy test machine stays inside one. Exact admission under concurrency,
 * the headers, and the official `openai` client's automatic retry after a 429.
 */
const UPSTREAM_KEY = "sk-upstream-windows";
const WINDOW_MS = "6000";
const config = (upstreamUrl: string) => `
providers:
  primary: { kind: openai, base_url: "${upstreamUrl}", api_key_env: E2E_UPSTREAM_KEY }
models:
  chat-window: { type: chat, routes: [{ provider: primary, model: gpt-4o-mini }] }
${testPlans}`;

let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
});
afterAll(async () => {
  await upstream?.close();
});

const targets = {
  "the mesh on Redis": () => startGatewayTarget("the mesh", config(upstream.url), env),
  "the embedded default in memory": () => startGatewayTarget("the embedded default", config(upstream.url), env),
};
const env = { E2E_UPSTREAM_KEY: UPSTREAM_KEY, GATEWAY_RATE_LIMIT_WINDOW_MS: WINDOW_MS };

for (const [name, start] of Object.entries(targets)) {
  describe(`when ${name} limits a key`, () => {
    let gw: GatewayTarget;
    let admin: ReturnType<typeof adminClient>;
    const newKey = async (limits: Record<string, number>) => {
      const ws = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "windows", plan: "pro" });
      return (await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, { limits })).key;
    };
    beforeAll(async () => {
      gw = await start();
      admin = adminClient(gw.adminURL, gw.adminToken);
    }, 180_000);
    afterAll(async () => {
      await gw?.stop();
    });

    it("then 100 concurrent requests at a limit of 10 admit exactly 10", async () => {
      const key = await newKey({ requests_per_minute: 10 });
      const statuses = await Promise.all(
        Array.from({ length: 100 }, async () => {
          const res = await fetch(`${gw.baseURL}/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "chat-window", messages: [{ role: "user", content: "hi" }] }),
          });
          await res.arrayBuffer();
          return res.status;
        }),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(90);
    });

    it("then the openai client, after a 429, waits as told and its retry succeeds", async () => {
      const key = await newKey({ requests_per_minute: 2 });
      const seen: number[] = [];
      const counting: typeof fetch = async (input, init) => {
        const res = await fetch(input, init);
        seen.push(res.status);
        return res;
      };
      const client = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 2, fetch: counting });
      const ask = () => client.chat.completions.create({ model: "chat-window", messages: [{ role: "user", content: "again" }] });
      await ask();
      await ask();
      const third = await ask().withResponse();
      expect(third.data.choices[0]?.message.content).toBe("Echo: again");
      expect(seen).toEqual([200, 200, 429, 200]);
    });

    it("then a 429's retry-after-ms never exceeds the window and the headers reset within it", async () => {
      const key = await newKey({ requests_per_minute: 1 });
      const send = () =>
        fetch(`${gw.baseURL}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "chat-window", messages: [{ role: "user", content: "hi" }] }),
        });
      const ok = await send();
      expect(ok.status).toBe(200);
      expect(ok.headers.get("x-ratelimit-reset-requests")).toMatch(/^(\d+ms|[0-6](\.\d+)?s)$/);
      const denied = await send();
      expect(denied.status).toBe(429);
      const waitMs = Number(denied.headers.get("retry-after-ms"));
      expect(waitMs).toBeGreaterThan(0);
      expect(waitMs).toBeLessThanOrEqual(Number(WINDOW_MS));
      expect(denied.headers.get("retry-after")).toBe(String(Math.ceil(waitMs / 1000)));
      await new Promise((r) => setTimeout(r, waitMs + 50));
      expect((await send()).status).toBe(200);
    });
  });
}
