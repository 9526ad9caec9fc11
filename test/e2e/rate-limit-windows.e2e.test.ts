import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadGatewayConfig, resolveProviderSecrets } from "@gw/config";
import { createLogger } from "@gw/logger";
import { startOpenAIUpstream } from "@gw/testkit";
import { loadEmbeddedEnv } from "../../services/embedded/src/config";
import { startEmbedded } from "../../services/embedded/src/embedded";
import { adminClient, startTestMesh } from "./harness";

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
plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`;

interface Target {
  baseURL: string;
  adminURL: string;
  adminToken: string;
  stop(): Promise<unknown>;
}

let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
});
afterAll(async () => {
  await upstream?.close();
});

const targets: Record<string, () => Promise<Target>> = {
  "the mesh on Redis": async () => {
    const gw = await startTestMesh(config(upstream.url), { E2E_UPSTREAM_KEY: UPSTREAM_KEY, GATEWAY_RATE_LIMIT_WINDOW_MS: WINDOW_MS });
    return { baseURL: gw.baseURL, adminURL: gw.adminURL, adminToken: gw.adminToken, stop: () => gw.stop() };
  },
  "the embedded default in memory": async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-windows-"));
    const configPath = join(dir, "gateway.config.yaml");
    writeFileSync(configPath, config(upstream.url));
    const env = loadEmbeddedEnv({ PORT: "0", ADMIN_PORT: "0", GATEWAY_DATA_DIR: dir, GATEWAY_CONFIG: configPath, GATEWAY_RATE_LIMIT_WINDOW_MS: WINDOW_MS });
    const gateway = loadGatewayConfig(env.GATEWAY_CONFIG);
    const logger = createLogger({ service: "windows-test", level: "silent" });
    const gw = await startEmbedded(env, gateway, resolveProviderSecrets(gateway, { E2E_UPSTREAM_KEY: UPSTREAM_KEY }), logger);
    return { baseURL: `${gw.url}/v1`, adminURL: gw.adminUrl, adminToken: gw.adminToken, stop: () => gw.stop() };
  },
};

for (const [name, start] of Object.entries(targets)) {
  describe(`when ${name} limits a key`, () => {
    let gw: Target;
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
