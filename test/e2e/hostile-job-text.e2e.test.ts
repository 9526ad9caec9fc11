import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIUpstream, startTavilyUpstream, type TavilyUpstream, type UpstreamEmulator } from "@gw/testkit";
import { eventually } from "./harness";
import { newWorkspaceKey, startGatewayTarget, targetNames, testPlans, type GatewayTarget } from "./targets";

/**
 * Text Postgres's jsonb refuses (U+0000, lone surrogates) in an async request, a research input and
 * what the upstream answers: the job is created, runs, and returns its result with every character
 * intact, on PGlite (the embedded default) and on Postgres (the mesh). And U+0000, which Postgres's text
 * cannot hold, in the ids, queries and bodies of the operator's and the console's APIs: a 4xx, never
 * a 500.
 */
const HOSTILE = "nul:\u0000 lone-high:\ud800 lone-low:\udc00 pair:\ud83d\ude00 end";
const KEYS = { oa: "sk-hostile-text", tavily: "tvly-hostile-text" };
let oa: UpstreamEmulator;
let tavily: TavilyUpstream;

beforeAll(async () => {
  oa = await startOpenAIUpstream({ apiKey: KEYS.oa });
  tavily = await startTavilyUpstream({ apiKey: KEYS.tavily, research: { pendingPolls: 0, inProgressPolls: 1 } });
});
afterAll(async () => {
  await Promise.all([oa?.close(), tavily?.close()]);
});

const config = () => `
providers:
  oa:      { kind: openai, base_url: "${oa.url}", api_key_env: HOSTILE_OA }
  webtool: { kind: tavily, base_url: "${tavily.url}", api_key_env: HOSTILE_TAVILY }
models:
  gpt: { type: chat, routes: [{ provider: oa, model: gpt-4o-mini }] }
${testPlans}`;

for (const name of targetNames) {
  describe(`when async jobs carry text jsonb refuses through ${name}`, () => {
    let gw: GatewayTarget;
    let key: string;

    beforeAll(async () => {
      gw = await startGatewayTarget(name, config(), { HOSTILE_OA: KEYS.oa, HOSTILE_TAVILY: KEYS.tavily, GATEWAY_RESEARCH_POLL_MS: "100" });
      key = (await newWorkspaceKey(gw, { name: "hostile" })).key;
    }, 180_000);
    afterAll(async () => {
      await gw?.stop();
    });

    /** JSON.stringify writes U+0000 and lone surrogates as \u escapes, as any JSON client sends them. */
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(`${gw.baseURL}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: JSON.parse(await res.text()) as Record<string, unknown> };
    };

    it("then an async chat job holding them is created, replayed by its idempotency key, and completes with them intact", async () => {
      const body = { model: "gpt", messages: [{ role: "user", content: HOSTILE }] };
      const created = await call("POST", "/async/chat/completions", body, { "idempotency-key": `hostile-${name.replace(/\W+/g, "-")}` });
      expect(created.status, JSON.stringify(created.body)).toBe(202);
      const replayed = await call("POST", "/async/chat/completions", body, { "idempotency-key": `hostile-${name.replace(/\W+/g, "-")}` });
      expect(replayed).toMatchObject({ status: 202, body: { id: created.body.id } });
      const done = await eventually(async () => {
        const job = await call("GET", `/async/chat/completions/${created.body.id as string}`);
        return job.body.status === "completed" || job.body.status === "failed" ? job.body : undefined;
      }, 30_000);
      expect(done?.status).toBe("completed");
      const result = done?.result as { choices: { message: { content: string } }[] };
      expect(result.choices[0]?.message.content).toBe(`Echo: ${HOSTILE}`);
      // The upstream received them as sent, too.
      expect(JSON.stringify(oa.requests.at(-1)?.body)).toContain(JSON.stringify(HOSTILE));
    });

    it("then a research job holding them in its input completes with them intact in the report", async () => {
      const started = await call("POST", "/tools/webtool/research", { input: HOSTILE });
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      expect(started.body.input).toBe(HOSTILE);
      const report = await eventually(async () => {
        const job = await call("GET", `/tools/webtool/research/${started.body.id as string}`);
        return job.body.status === "completed" || job.body.status === "failed" ? job.body : undefined;
      }, 30_000);
      expect(report?.status).toBe("completed");
      expect(report?.content).toContain(HOSTILE);
      expect([...tavily.researchTasks.values()].map((t) => t.input)).toContain(HOSTILE);
    });

    it("then U+0000 in the admin API's ids, queries and bodies, the ledger's queries and the console's sign-in is a 4xx in the envelope, never a 500", async () => {
      const admin = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${gw.adminURL}${path}`, {
          method,
          headers: { authorization: `Bearer ${gw.adminToken}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.status, body: JSON.parse(await res.text()) as { error?: { type: string; message: string } } };
      };
      const { workspaceId, keyId } = await newWorkspaceKey(gw, { name: "nul" });
      const refused: [string, string, unknown?][] = [
        ["GET", "/admin/workspaces/ws%00/keys"],
        ["PATCH", "/admin/workspaces/ws%00", { plan: "pro" }],
        ["PATCH", "/admin/keys/key%00", { status: "disabled" }],
        ["GET", "/admin/audit?workspace_id=%00"],
        ["POST", "/admin/workspaces", { name: "a\u0000b", plan: "pro" }],
        ["PATCH", `/admin/workspaces/${workspaceId}`, { name: "\u0000" }],
        ["PATCH", `/admin/keys/${keyId}`, { name: "k\u0000" }],
      ];
      for (const [method, path, body] of refused) {
        const answer = await admin(method, path, body);
        expect([answer.status, answer.body.error?.type], `${method} ${path}`).toEqual([400, "invalid_request_error"]);
        expect(answer.body.error?.message).toContain("U+0000");
      }
      // The ledger reads U+0000 as ingest stored it (U+FFFD): nothing matches, nothing fails.
      for (const path of [`/admin/logs?model=a%00b`, "/admin/logs?workspace_id=%00", "/admin/usage?key_id=%00", "/admin/workspaces/ws%00/statement"]) {
        expect((await admin("GET", path)).status, path).toBe(200);
      }
      expect((await admin("GET", "/admin/logs/req_%00")).status).toBe(404);
      const signIn = await fetch(`${new URL(gw.baseURL).origin}/console/api/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "a\u0000@example.com", password: "long enough password" }),
      });
      expect(signIn.status).toBe(400);
      expect((await admin("GET", `/admin/workspaces/${workspaceId}/keys`)).status).toBe(200);
    });
  });
}
