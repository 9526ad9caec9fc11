import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertOpenAI, startOpenAIUpstream } from "@gw/testkit";
import { adminClient, eventually, startTestMesh, type RunningMesh } from "./harness";

/**
 * The four services as separate processes, driven through ingress with the official `openai`
 * client against an emulated OpenAI-compatible upstream.
 */
const UPSTREAM_KEY = "sk-upstream-server-credential";

let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let gw: RunningMesh;
let admin: ReturnType<typeof adminClient>;
let key: string;
let workspaceId: string;
const client = (apiKey: string, maxRetries = 0) => new OpenAI({ apiKey, baseURL: gw.baseURL, maxRetries });

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
  gw = await startTestMesh(
    `
providers:
  primary: { kind: openai, base_url: "${upstream.url}", api_key_env: E2E_UPSTREAM_KEY, timeout_ms: 5000, max_retries: 0 }
  retrying: { kind: openai, base_url: "${upstream.url}", api_key_env: E2E_UPSTREAM_KEY, timeout_ms: 5000, max_retries: 2 }
  breaking: { kind: openai, base_url: "${upstream.url}", api_key_env: E2E_UPSTREAM_KEY, timeout_ms: 5000, max_retries: 0 }
  nokey:   { kind: openai, base_url: "http://127.0.0.1:9/v1", api_key_env: E2E_UNSET_KEY }
models:
  chat-e2e:      { type: chat, routes: [{ provider: primary, model: gpt-4o-mini }] }
  chat-fallback: { type: chat, routes: [{ provider: primary, model: gpt-4o-mini }, { provider: primary, model: gpt-4o }] }
  chat-other:    { type: chat, routes: [{ provider: primary, model: gpt-4o }] }
  chat-nokey:    { type: chat, routes: [{ provider: nokey, model: x }] }
  chat-retry:    { type: chat, routes: [{ provider: retrying, model: gpt-4o-mini }, { provider: retrying, model: gpt-4o }] }
  chat-breaker:  { type: chat, routes: [{ provider: breaking, model: gpt-4o-mini }, { provider: breaking, model: gpt-4o }] }
  embed-e2e:     { type: embedding, routes: [{ provider: primary, model: text-embedding-3-small }] }
plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`,
    { E2E_UPSTREAM_KEY: UPSTREAM_KEY },
  );
  admin = adminClient(gw.adminURL, gw.adminToken);
  const ws = await admin<{ id: string }>("POST", "/admin/workspaces", {
    name: "e2e",
    plan: "pro",
    models: ["chat-e2e", "chat-fallback", "chat-nokey", "chat-retry", "chat-breaker", "embed-*"],
  });
  workspaceId = ws.id;
  key = (await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, { name: "main" })).key;
}, 180_000);

afterAll(async () => {
  const codes = await gw?.stop();
  await upstream?.close();
  // SIGTERM is a clean exit for every service.
  if (codes) expect(codes).toEqual({ inference: 0, tools: 0, jobs: 0, usage: 0, console: 0, ingress: 0 });
});

describe("when the openai client lists models through the mesh", () => {
  it("then it sees exactly the workspace's models, narrowed by the key", async () => {
    const ids = [];
    for await (const m of client(key).models.list()) ids.push(m.id);
    expect(ids.sort()).toEqual(["chat-breaker", "chat-e2e", "chat-fallback", "chat-nokey", "chat-retry", "embed-e2e"]);

    const narrow = (await admin<{ key: string }>("POST", `/admin/workspaces/${workspaceId}/keys`, { models: ["chat-e2e"] })).key;
    const narrowed = [];
    for await (const m of client(narrow).models.list()) narrowed.push(m.id);
    expect(narrowed).toEqual(["chat-e2e"]);
    const res = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
    assertOpenAI("ListModelsResponse", await res.json());
  });
});

describe("when the openai client asks for a chat completion", () => {
  it("then the answer names the public model and the upstream saw only the server's credential", async () => {
    upstream.reset();
    const completion = await client(key).chat.completions.create({
      model: "chat-e2e",
      messages: [{ role: "user", content: "hello mesh" }],
      temperature: 0.2,
    });
    assertOpenAI("CreateChatCompletionResponse", completion);
    expect(completion.model).toBe("chat-e2e");
    expect(completion.choices[0]?.message.content).toContain("hello mesh");

    const seen = upstream.requests.at(-1)!;
    expect(seen.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    const rawHeaders = JSON.stringify(seen.headers);
    expect(rawHeaders).not.toContain(key);
    expect(rawHeaders).not.toContain("x-gw-");
    expect((seen.body as { model: string; temperature: number }).model).toBe("gpt-4o-mini");
    expect((seen.body as { temperature: number }).temperature).toBe(0.2);
  });

  it("then a streamed answer arrives chunk by chunk, each naming the public model", async () => {
    const stream = await client(key).chat.completions.create({
      model: "chat-e2e",
      messages: [{ role: "user", content: "stream me" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let chunks = 0;
    let usage: unknown;
    for await (const chunk of stream) {
      assertOpenAI("CreateChatCompletionStreamResponse", chunk);
      expect(chunk.model).toBe("chat-e2e");
      chunks++;
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text).toContain("stream me");
    expect(usage).toMatchObject({ total_tokens: expect.any(Number) });
  });

  it("then tools and tool_choice pass through and the tool call comes back, streamed or not", async () => {
    const tools = [
      {
        type: "function" as const,
        function: { name: "get_weather", description: "weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
      },
    ];
    const done = await client(key).chat.completions.create({
      model: "chat-e2e",
      messages: [{ role: "user", content: "weather in Paris" }],
      tools,
      tool_choice: { type: "function", function: { name: "get_weather" } },
    });
    const call = done.choices[0]?.message.tool_calls?.[0];
    expect(done.choices[0]?.finish_reason).toBe("tool_calls");
    expect(call?.type === "function" && call.function.name).toBe("get_weather");
    expect(upstream.requests.at(-1)?.body).toMatchObject({ tools, tool_choice: { type: "function", function: { name: "get_weather" } } });

    const runner = client(key).chat.completions.stream({ model: "chat-e2e", messages: [{ role: "user", content: "weather in Oslo" }], tools });
    const final = await runner.finalChatCompletion();
    const streamed = final.choices[0]?.message.tool_calls?.[0];
    expect(streamed?.type === "function" && streamed.function.name).toBe("get_weather");
    expect(() => JSON.parse(streamed?.type === "function" ? streamed.function.arguments : "")).not.toThrow();
  });
});

describe("when the caller is not allowed", () => {
  it("then a missing, malformed, unknown or revoked key is a 401", async () => {
    const noKey = await fetch(`${gw.baseURL}/models`);
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ error: { code: "missing_api_key" } });
    await expect(client("not-a-key").models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(client(`gw_live_${"x".repeat(40)}`).models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);

    const created = await admin<{ id: string; key: string }>("POST", `/admin/workspaces/${workspaceId}/keys`, {});
    expect((await client(created.key).models.list()).data.length).toBeGreaterThan(0);
    await admin("PATCH", `/admin/keys/${created.id}`, { status: "revoked" });
    await expect(client(created.key).models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("then a disabled key, a canceled subscription or a model outside the allow-list is a 403", async () => {
    const k = await admin<{ id: string; key: string }>("POST", `/admin/workspaces/${workspaceId}/keys`, {});
    await admin("PATCH", `/admin/keys/${k.id}`, { status: "disabled" });
    await expect(client(k.key).models.list()).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    await admin("PATCH", `/admin/keys/${k.id}`, { status: "active" });
    await expect(client(k.key).models.list()).resolves.toBeDefined();

    const before = upstream.requests.length;
    const outside = client(key).chat.completions.create({ model: "chat-other", messages: [{ role: "user", content: "x" }] });
    await expect(outside).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(upstream.requests.length).toBe(before);

    const other = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "canceled", plan: "plus" });
    const otherKey = (await admin<{ key: string }>("POST", `/admin/workspaces/${other.id}/keys`, {})).key;
    await admin("PATCH", `/admin/workspaces/${other.id}`, { subscription: "canceled" });
    await expect(client(otherKey).models.list()).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
  });

  it("then a forged internal identity header is stripped at the door", async () => {
    const res = await fetch(`${gw.baseURL}/models`, {
      headers: { authorization: `Bearer ${key}`, "x-gw-identity": "forged.signature" },
    });
    expect(res.status).toBe(200);
    const direct = await fetch(`http://127.0.0.1:${gw.ports.inference}/v1/models`, { headers: { "x-gw-identity": "forged.signature" } });
    expect(direct.status).toBe(401);
  });
});

describe("when the request or the upstream fails", () => {
  it("then a bad body is a 400 in the OpenAI envelope naming the field", async () => {
    const bad = client(key).chat.completions.create({ model: "chat-e2e", messages: [{ role: "user" }] as never });
    const err = await bad.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("messages[0].content");
    const notJson = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{nope",
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { type: "invalid_request_error", param: null } });
  });

  it("then an upstream 429 stays a 429 with retry-after, and a 500 becomes a 502", async () => {
    upstream.script({ status: 429, headers: { "retry-after": "7" } });
    const limited = await client(key)
      .chat.completions.create({ model: "chat-e2e", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers?.get("retry-after")).toBe("7");

    upstream.script({ status: 500 });
    const failed = await client(key)
      .chat.completions.create({ model: "chat-e2e", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(OpenAI.InternalServerError);
    expect((failed as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(502);
  });

  it("then a model whose provider has no credential answers 503 without calling out", async () => {
    const before = upstream.requests.length;
    const err = await client(key)
      .chat.completions.create({ model: "chat-nokey", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(503);
    expect(upstream.requests.length).toBe(before);
  });

  it("then a retryable failure falls back to the model's next route", async () => {
    upstream.reset();
    upstream.script({ status: 503 });
    const completion = await client(key).chat.completions.create({ model: "chat-fallback", messages: [{ role: "user", content: "fall back" }] });
    expect(completion.model).toBe("chat-fallback");
    expect(upstream.requests.map((r) => (r.body as { model: string }).model)).toEqual(["gpt-4o-mini", "gpt-4o"]);
  });

  it("then a deployment that keeps failing is skipped: after 5 failures in a row, calls go straight to the next route", async () => {
    upstream.reset();
    // The emulator's script answers requests in arrival order: the primary fails, the fallback answers.
    upstream.script(...Array.from({ length: 5 }, () => [{ status: 503 }, {}]).flat());
    for (let i = 0; i < 6; i++) {
      const completion = await client(key).chat.completions.create({ model: "chat-breaker", messages: [{ role: "user", content: "break" }] });
      expect(completion.choices[0]?.message.content).toBe("Echo: break");
    }
    const models = upstream.requests.map((r) => (r.body as { model: string }).model);
    // Five times: the failing primary, then the fallback; the sixth call skips the open circuit.
    expect(models).toEqual([...Array.from({ length: 5 }, () => ["gpt-4o-mini", "gpt-4o"]).flat(), "gpt-4o"]);
  });

  it("then a provider with retries retries the same route with backoff before falling back", async () => {
    upstream.reset();
    upstream.script({ status: 503 });
    const once = await client(key).chat.completions.create({ model: "chat-retry", messages: [{ role: "user", content: "retry" }] });
    expect(once.choices[0]?.message.content).toBe("Echo: retry");
    expect(upstream.requests.map((r) => (r.body as { model: string }).model)).toEqual(["gpt-4o-mini", "gpt-4o-mini"]);

    upstream.reset();
    upstream.script({ status: 502 }, { status: 500 }, { status: 503 });
    const after = await client(key).chat.completions.create({ model: "chat-retry", messages: [{ role: "user", content: "retry" }] });
    expect(after.model).toBe("chat-retry");
    expect(upstream.requests.map((r) => (r.body as { model: string }).model)).toEqual(["gpt-4o-mini", "gpt-4o-mini", "gpt-4o-mini", "gpt-4o"]);
  });

  it("then a client that disconnects mid-stream cancels the upstream request", async () => {
    upstream.reset();
    const controller = new AbortController();
    const slow = await startSlowStream(controller);
    expect(slow).toBe(true);
    await eventually(() => upstream.requests.at(-1)?.aborted === true, 10_000);
  });
});

describe("when an operator scrapes the services", () => {
  it("then ingress (admin port) and inference count requests and latency by route and status", async () => {
    const ingress = await (await fetch(`${gw.adminURL}/metrics`)).text();
    expect(ingress).toMatch(/gw_http_requests_total\{[^}]*route="\/v1\/chat\/completions"[^}]*status="200"[^}]*\} [1-9]/);
    expect(ingress).toMatch(/gw_http_requests_total\{[^}]*route="\/v1\/models"[^}]*status="401"[^}]*\} [1-9]/);
    expect(ingress).toMatch(/gw_http_request_duration_seconds_bucket\{[^}]*route="\/v1\/chat\/completions"/);
    const inference = await (await fetch(`http://127.0.0.1:${gw.ports.inference}/metrics`)).text();
    expect(inference).toMatch(/gw_http_requests_total\{[^}]*route="\/v1\/chat\/completions"[^}]*status="502"[^}]*\} [1-9]/);
    for (const port of [gw.ports.tools, gw.ports.jobs]) {
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    }
  });
});

describe("when an operator scrapes inference after model calls", () => {
  it("then it exports the GenAI metrics in the conventions' names, labelled from the config only, and the retries", async () => {
    upstream.reset();
    const completion = await client(key).chat.completions.create({ model: "chat-e2e", messages: [{ role: "user", content: "metrics" }] });
    // One failure, then success: one retry on the same deployment.
    upstream.script({ status: 502 });
    await client(key).chat.completions.create({ model: "chat-retry", messages: [{ role: "user", content: "retry once" }] });
    const scrape = async () => (await fetch(`http://127.0.0.1:${gw.ports.inference}/metrics`)).text();
    const call = { gen_ai_operation_name: "chat", gen_ai_provider_name: "primary", gen_ai_request_model: "chat-e2e" };
    // Calls are observed a batch at a time, a moment after they end.
    await eventually(async () => !Number.isNaN(sample(await scrape(), "gen_ai_client_token_usage_sum", { ...call, gen_ai_token_type: "input" })), 10_000);
    const text = await scrape();
    // The sums include this call's counts as the upstream reported them (earlier calls of this model add to them).
    expect(sample(text, "gen_ai_client_token_usage_sum", { ...call, gen_ai_token_type: "input" })).toBeGreaterThanOrEqual(completion.usage!.prompt_tokens);
    expect(sample(text, "gen_ai_client_token_usage_sum", { ...call, gen_ai_token_type: "output" })).toBeGreaterThanOrEqual(completion.usage!.completion_tokens);
    expect(sample(text, "gen_ai_client_token_usage_count", { ...call, gen_ai_token_type: "output" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "gen_ai_server_request_duration_seconds_count", call)).toBeGreaterThanOrEqual(1);
    expect(sample(text, "gw_upstream_retries_total", { deployment: "retrying/gpt-4o-mini" })).toBeGreaterThanOrEqual(1);
    // No workspace, key or request id is ever a label value.
    const series = text.split("\n").filter((line) => !line.startsWith("#"));
    expect(series.filter((line) => /ws_|key_|req_/.test(line))).toEqual([]);
  });
});

/** The value of the series `name` whose labels include `labels` (in any order), NaN when there is none. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([label, value]) => `${label}="${value}"`);
  for (const line of text.split("\n")) {
    const match = /^([a-z_:]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const own = match[2]!.split(",");
    if (wanted.every((pair) => own.includes(pair)) && own.length === wanted.length + 1) return Number(match[3]);
  }
  return Number.NaN;
}

/** Starts a slowly paced stream, reads its first chunk, then aborts. */
async function startSlowStream(controller: AbortController): Promise<boolean> {
  upstream.script({ status: 200, chunkDelayMs: 300 });
  const stream = await client(key).chat.completions.create(
    { model: "chat-e2e", messages: [{ role: "user", content: "a long answer please with many words" }], stream: true },
    { signal: controller.signal },
  );
  for await (const chunk of stream) {
    if (chunk.choices.length > 0) {
      controller.abort();
      return true;
    }
  }
  return false;
}
