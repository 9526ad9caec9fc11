import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIUpstream } from "@gw/testkit";
import { adminClient, eventually } from "./harness";
import { type GatewayTarget, newWorkspaceKey, startGatewayTarget, targetNames, testPlans } from "./targets";

/**
 * Detailed logs end to end, in the mesh and in the embedded default: an Enterprise workspace that
 * captures bodies gets them, redacted and cut at 256 KB, on `GET /admin/logs/{request_id}`; a key
 * that opts out, a workspace that never turned them on, and a plan without them get none.
 */
// No known key shape: only the gateway's knowing it as a configured provider key can redact it.
const UPSTREAM_KEY = "upstream-detailed-logs-key-0001";
const CAP = 256 * 1024;

let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
}, 60_000);
afterAll(async () => {
  await upstream?.close();
});

const config = () => `
providers:
  primary: { kind: openai, base_url: "${upstream.url}", api_key_env: E2E_UPSTREAM_KEY, timeout_ms: 10000 }
models:
  chat-logs: { type: chat, routes: [{ provider: primary, model: gpt-4o-mini }] }
${testPlans}`;

interface Captured {
  text: string;
  truncated: boolean;
  bytes: number;
}
interface LogRecord {
  request_id: string;
  status: number;
  request_body?: Captured;
  response_body?: Captured;
}

// Secrets placed in the body: ours and a provider's in the text, and a credential-named field deep in a tool's schema.
const OUR_KEY = "gw_live_SECRETSECRETSECRETSECRET01";
const PROVIDER_KEY = "sk-proj-PROVIDERSECRETPROVIDERSECRET";
const DEEP_VALUE = "deep-credential-value-0123";

for (const name of targetNames) {
  describe(`detailed logs in ${name}`, { timeout: 180_000 }, () => {
    let gw: GatewayTarget;
    let admin: ReturnType<typeof adminClient>;

    beforeAll(async () => {
      gw = await startGatewayTarget(name, config(), { E2E_UPSTREAM_KEY: UPSTREAM_KEY, LOG_LEVEL: "warn" });
      admin = adminClient(gw.adminURL, gw.adminToken);
    }, 180_000);
    afterAll(async () => {
      await gw?.stop();
    });

    const log = (requestId: string) => admin<LogRecord>("GET", `/admin/logs/${requestId}`);
    const withBodies = (requestId: string) => eventually(async () => ((await log(requestId)).request_body ? log(requestId) : undefined), 30_000);
    const chat = async (key: string, body: Record<string, unknown>) => {
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "chat-logs", ...body }),
      });
      const text = await res.text();
      return { status: res.status, text, requestId: res.headers.get("x-request-id") as string };
    };

    it("then a captured request and its answer are kept, with every credential redacted, however deep", async () => {
      const { key } = await newWorkspaceKey(gw, { name: "logs", plan: "enterprise", logging: { bodies: true, retention_days: 7 } });
      const answer = await chat(key, {
        messages: [{ role: "user", content: `my keys are ${OUR_KEY} and ${PROVIDER_KEY}, and yours is ${UPSTREAM_KEY}` }],
        tools: [
          {
            type: "function",
            function: {
              name: "lookup",
              description: "d",
              parameters: { type: "object", properties: { q: { type: "string" }, nested: { api_key: DEEP_VALUE } } },
            },
          },
        ],
        tool_choice: "none",
      });
      expect(answer.status).toBe(200);
      const record = await withBodies(answer.requestId);
      const request = record.request_body as Captured;
      for (const secret of [OUR_KEY, PROVIDER_KEY, DEEP_VALUE, UPSTREAM_KEY]) expect(request.text).not.toContain(secret);
      expect(JSON.parse(request.text)).toMatchObject({
        model: "chat-logs",
        messages: [{ role: "user", content: "my keys are [REDACTED] and [REDACTED], and yours is [REDACTED]" }],
        tools: [{ function: { parameters: { properties: { nested: { api_key: "[REDACTED]" } } } } }],
      });
      expect(request).toMatchObject({ truncated: false, content_type: "application/json" });
      // The answer as the caller got it, but for the keys it echoed back.
      expect(answer.text).toContain(OUR_KEY);
      const redacted = answer.text.replaceAll(OUR_KEY, "[REDACTED]").replaceAll(PROVIDER_KEY, "[REDACTED]").replaceAll(UPSTREAM_KEY, "[REDACTED]");
      expect(JSON.parse((record.response_body as Captured).text)).toEqual(JSON.parse(redacted));
    });

    it("then a stream's answer is kept assembled, and a body over 256 KB is cut and marked", async () => {
      const { key } = await newWorkspaceKey(gw, { name: "logs", plan: "enterprise", logging: { bodies: true, retention_days: 1 } });
      const openai = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });
      const stream = await openai.chat.completions
        .create({ model: "chat-logs", stream: true, messages: [{ role: "user", content: "stream this please" }] })
        .withResponse();
      let streamed = "";
      for await (const chunk of stream.data) streamed += chunk.choices[0]?.delta.content ?? "";
      const assembled = JSON.parse(((await withBodies(stream.response.headers.get("x-request-id") as string)).response_body as Captured).text);
      expect(assembled).toMatchObject({
        object: "chat.completion",
        model: "chat-logs",
        choices: [{ index: 0, message: { role: "assistant", content: streamed } }],
      });
      expect(streamed.length).toBeGreaterThan(0);

      const big = await chat(key, { max_tokens: 3, messages: [{ role: "user", content: "word ".repeat(60_000) }] });
      expect(big.status).toBe(200);
      const request = (await withBodies(big.requestId)).request_body as Captured;
      expect(request.truncated).toBe(true);
      expect(request.bytes).toBeGreaterThan(300_000);
      expect(Buffer.byteLength(request.text)).toBeLessThanOrEqual(CAP);
      expect(Buffer.byteLength(request.text)).toBeGreaterThan(CAP - 8);
    });

    it("then an async job's bodies are its request and its result, kept once it has run", async () => {
      const { key } = await newWorkspaceKey(gw, { name: "logs", plan: "enterprise", logging: { bodies: true, retention_days: 7 } });
      const created = await fetch(`${gw.baseURL}/async/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "chat-logs", messages: [{ role: "user", content: `later, with ${OUR_KEY}` }] }),
      });
      expect(created.status).toBe(202);
      const job = (await created.json()) as { id: string };
      const requestId = created.headers.get("x-request-id") as string;
      const done = await eventually(async () => {
        const res = await fetch(`${gw.baseURL}/async/chat/completions/${job.id}`, { headers: { authorization: `Bearer ${key}` } });
        const polled = (await res.json()) as { status: string; result?: unknown };
        return polled.status === "completed" ? polled : undefined;
      }, 30_000);
      const record = await withBodies(requestId);
      expect(JSON.parse((record.request_body as Captured).text)).toEqual({
        model: "chat-logs",
        messages: [{ role: "user", content: "later, with [REDACTED]" }],
      });
      expect(JSON.parse((record.response_body as Captured).text)).toEqual(JSON.parse(JSON.stringify(done.result).replaceAll(OUR_KEY, "[REDACTED]")));
    });

    it("then a key that opts out, a workspace that never opted in, and a plan without detailed logs keep no bodies", async () => {
      const { workspaceId, key } = await newWorkspaceKey(gw, { name: "logs", plan: "enterprise", logging: { bodies: true, retention_days: 7 } });
      const optedOut = await admin<{ key: string }>("POST", `/admin/workspaces/${workspaceId}/keys`, { logging: { bodies: false } });
      const plain = await newWorkspaceKey(gw, { name: "plain", plan: "enterprise" });
      const quiet = await chat(optedOut.key, { messages: [{ role: "user", content: "not me" }] });
      const unset = await chat(plain.key, { messages: [{ role: "user", content: "nor me" }] });
      // A captured request sent after them: once its bodies are in, theirs would have been too.
      const captured = await chat(key, { messages: [{ role: "user", content: "me" }] });
      await withBodies(captured.requestId);
      for (const requestId of [quiet.requestId, unset.requestId]) {
        const record = await eventually(() => log(requestId).catch(() => undefined), 30_000);
        expect(record.status).toBe(200);
        expect(record.request_body).toBeUndefined();
        expect(record.response_body).toBeUndefined();
      }
      const pro = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "pro", plan: "pro" });
      const refused = await fetch(`${gw.adminURL}/admin/workspaces/${pro.id}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${gw.adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ logging: { bodies: true, retention_days: 7 } }),
      });
      expect(refused.status).toBe(409);
      expect(await refused.json()).toMatchObject({ error: { param: "logging.bodies" } });
    });
  });
}
