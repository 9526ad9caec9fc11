import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIUpstream } from "@gw/testkit";
import { adminClient, startTestMesh, type RunningMesh } from "./harness";

/**
 * Enterprise workspaces' own provider credentials: registered through the admin API, sealed at rest,
 * carried sealed to inference, and used upstream instead of the platform's key.
 */
const PLATFORM_KEY = "sk-platform-credential";
const OWN_KEY = "sk-enterprise-own-credential";

let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let gw: RunningMesh;
let admin: ReturnType<typeof adminClient>;

beforeAll(async () => {
  upstream = await startOpenAIUpstream(); // accepts any key and records what it was sent
  gw = await startTestMesh(
    `
providers:
  primary: { kind: openai, base_url: "${upstream.url}", api_key_env: E2E_PLATFORM_KEY }
models:
  chat-own: { type: chat, routes: [{ provider: primary, model: gpt-4o-mini }] }
plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`,
    { E2E_PLATFORM_KEY: PLATFORM_KEY, GATEWAY_MASTER_KEY: "e2e-master-key-0123456789abcdefghij" },
  );
  admin = adminClient(gw.adminURL, gw.adminToken);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

async function workspaceKey(plan: string) {
  const ws = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "byok", plan });
  const key = await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, {});
  return { id: ws.id, client: new OpenAI({ apiKey: key.key, baseURL: gw.baseURL, maxRetries: 0 }) };
}

const upstreamKeyOf = async (client: OpenAI) => {
  await client.chat.completions.create({ model: "chat-own", messages: [{ role: "user", content: "whose key?" }] });
  return upstream.requests.at(-1)?.headers.authorization;
};

describe("when an enterprise workspace registers its own OpenAI key", () => {
  it("then its requests use it upstream, other workspaces keep the platform's, and a plan change or removal restores the platform's", async () => {
    const ent = await workspaceKey("enterprise");
    const pro = await workspaceKey("pro");
    expect(await upstreamKeyOf(ent.client)).toBe(`Bearer ${PLATFORM_KEY}`);

    await admin("PUT", `/admin/workspaces/${ent.id}/credentials/primary`, { api_key: OWN_KEY });
    expect(await upstreamKeyOf(ent.client)).toBe(`Bearer ${OWN_KEY}`);
    expect(await upstreamKeyOf(pro.client)).toBe(`Bearer ${PLATFORM_KEY}`);

    await admin("PATCH", `/admin/workspaces/${ent.id}`, { plan: "pro" });
    expect(await upstreamKeyOf(ent.client)).toBe(`Bearer ${PLATFORM_KEY}`);
    await admin("PATCH", `/admin/workspaces/${ent.id}`, { plan: "enterprise" });
    expect(await upstreamKeyOf(ent.client)).toBe(`Bearer ${OWN_KEY}`);

    await admin("DELETE", `/admin/workspaces/${ent.id}/credentials/primary`);
    expect(await upstreamKeyOf(ent.client)).toBe(`Bearer ${PLATFORM_KEY}`);
  });

  it("then the key appears in no admin answer and no service log", async () => {
    const ent = await workspaceKey("enterprise");
    const put = await admin("PUT", `/admin/workspaces/${ent.id}/credentials/primary`, { api_key: OWN_KEY });
    const list = await admin("GET", `/admin/workspaces/${ent.id}/credentials`);
    expect(JSON.stringify([put, list])).not.toContain(OWN_KEY);
    await upstreamKeyOf(ent.client);
    expect(gw.output()).not.toContain(OWN_KEY);
  });

  it("then a client cannot smuggle credentials in: its x-gw-credentials header is dropped", async () => {
    const pro = await workspaceKey("pro");
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${(pro.client as unknown as { apiKey: string }).apiKey}`,
        "content-type": "application/json",
        "x-gw-credentials": "v1.a.b.c",
      },
      body: JSON.stringify({ model: "chat-own", messages: [{ role: "user", content: "x" }] }),
    });
    expect(res.status).toBe(200);
    expect(upstream.requests.at(-1)?.headers.authorization).toBe(`Bearer ${PLATFORM_KEY}`);
  });
});
