import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNatsBus } from "@gw/bus";
import { loadGatewayConfig, resolveProviderSecrets } from "@gw/config";
import { createLogger } from "@gw/logger";
import { startOpenAIUpstream, startTavilyUpstream, withClient, type TavilyUpstream, type UpstreamEmulator } from "@gw/testkit";
// Not dependencies of the test folder: the wire contract, the sealer and PGlite, by path.
import { providerCredentialSealing, type JobWork } from "../../packages/contracts/src/bus";
import { createPgliteDb } from "../../packages/db/src/pglite-db";
import { Sealer } from "../../packages/service-kit/src/sealed";
import { loadEmbeddedEnv } from "../../services/embedded/src/config";
import { startEmbedded } from "../../services/embedded/src/embedded";
import { adminClient, eventually, startTestMesh, type RunningMesh } from "./harness";
import { newWorkspaceKey, targetNames, testPlans, type TargetName } from "./targets";

/**
 * Enterprise workspaces' own provider credentials must not leak across tenants (issue 20): a key the
 * provider refuses is that workspace's 424, neither retried nor held against the deployment's other
 * tenants; an async job keeps credentials sealed under the master key only while it can run, and each
 * retry runs with the workspace's credentials as they are then (rotated, or deleted).
 */
const MASTER_KEY = "tenant-credentials-e2e-master-key-0123456789";
const KEYS = { strict: "sk-tenant-platform-strict", lenient: "sk-tenant-platform-lenient", tavily: "tvly-tenant-platform" };
const env = {
  TENANT_STRICT_KEY: KEYS.strict,
  TENANT_LENIENT_KEY: KEYS.lenient,
  TENANT_TAVILY_KEY: KEYS.tavily,
  GATEWAY_MASTER_KEY: MASTER_KEY,
  // A first attempt held upstream longer than this is retried, which is what the retry tests need.
  GATEWAY_JOB_TIMEOUT_MS: "2500",
  GATEWAY_JOB_SWEEP_MS: "100",
  GATEWAY_RESEARCH_POLL_MS: "100",
};
const atRest = new Sealer(MASTER_KEY, providerCredentialSealing.purpose);

let strict: UpstreamEmulator; // accepts only the platform's key, as a provider refuses a revoked one
let lenient: UpstreamEmulator; // accepts any key and records which one arrived
let tavily: TavilyUpstream;

beforeAll(async () => {
  strict = await startOpenAIUpstream({ apiKey: KEYS.strict });
  lenient = await startOpenAIUpstream();
  tavily = await startTavilyUpstream({ apiKey: KEYS.tavily, research: { pendingPolls: 0, inProgressPolls: 0 } });
});
afterAll(async () => {
  await Promise.all([strict?.close(), lenient?.close(), tavily?.close()]);
});

const config = () => `
providers:
  strict:  { kind: openai, base_url: "${strict.url}", api_key_env: TENANT_STRICT_KEY, max_retries: 2 }
  lenient: { kind: openai, base_url: "${lenient.url}", api_key_env: TENANT_LENIENT_KEY, max_retries: 0 }
  webtool: { kind: tavily, base_url: "${tavily.url}", api_key_env: TENANT_TAVILY_KEY, max_retries: 2 }
models:
  chat-strict:  { type: chat, routes: [{ provider: strict, model: gpt-4o-mini }] }
  chat-lenient: { type: chat, routes: [{ provider: lenient, model: gpt-4o-mini }] }
${testPlans}`;

interface Target {
  baseURL: string;
  adminURL: string;
  adminToken: string;
  mesh?: RunningMesh;
  /** The embedded default's PGlite folder, readable once it has stopped. */
  pgliteDir?: string;
  stop(): Promise<unknown>;
}

async function startTarget(name: TargetName): Promise<Target> {
  if (name === "the mesh") {
    const mesh = await startTestMesh(config(), env);
    return { baseURL: mesh.baseURL, adminURL: mesh.adminURL, adminToken: mesh.adminToken, mesh, stop: () => mesh.stop() };
  }
  const dir = mkdtempSync(join(tmpdir(), "gw-tenant-"));
  writeFileSync(join(dir, "gateway.config.yaml"), config());
  const embeddedEnv = loadEmbeddedEnv({ ...env, PORT: "0", ADMIN_PORT: "0", GATEWAY_DATA_DIR: dir, GATEWAY_CONFIG: join(dir, "gateway.config.yaml") });
  const gateway = loadGatewayConfig(embeddedEnv.GATEWAY_CONFIG);
  const gw = await startEmbedded(embeddedEnv, gateway, resolveProviderSecrets(gateway, env), createLogger({ service: "tenant-e2e", level: "silent" }));
  return { baseURL: `${gw.url}/v1`, adminURL: gw.adminUrl, adminToken: gw.adminToken, pgliteDir: join(dir, "pglite"), stop: () => gw.stop() };
}

interface Job {
  id: string;
  status: string;
  result?: { choices?: { message?: { content?: string } }[] };
  error?: { error?: { message?: string } };
}

for (const name of targetNames) {
  describe(`when workspaces bring their own provider credentials through ${name}`, () => {
    let gw: Target;
    let admin: ReturnType<typeof adminClient>;
    /** The mesh's Postgres, to read job rows (the embedded default's PGlite is read once it has stopped). */
    let db: { query<R>(sql: string, params: unknown[]): Promise<{ rows: R[] }> } | undefined;

    beforeAll(async () => {
      for (const upstream of [strict, lenient, tavily]) upstream.reset(); // counts are per target
      gw = await startTarget(name);
      admin = adminClient(gw.adminURL, gw.adminToken);
      const url = gw.mesh?.env.DATABASE_URL;
      if (url) db = { query: async <R>(sql: string, params: unknown[]) => ({ rows: (await withClient(url, (c) => c.query(sql, params))).rows as R[] }) };
    }, 180_000);
    afterAll(async () => {
      await gw?.stop();
    });

    const workspace = async (plan: string, credentials: Record<string, string> = {}) => {
      const ws = await newWorkspaceKey(gw, { name: `tenant-${plan}`, plan });
      for (const [provider, key] of Object.entries(credentials))
        await admin("PUT", `/admin/workspaces/${ws.workspaceId}/credentials/${provider}`, { api_key: key });
      return ws;
    };
    const post = async (key: string, path: string, body: unknown) => {
      const res = await fetch(`${gw.baseURL}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const finished = (key: string, id: string) =>
      eventually(async () => {
        const job = (await (await fetch(`${gw.baseURL}/async/chat/completions/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Job;
        return job.status === "completed" || job.status === "failed" ? job : undefined;
      }, 30_000);
    const rowOf = async (id: string) =>
      (
        await db!.query<{ credentials: Record<string, { sealed?: string }> | null; status: string }>(
          "SELECT credentials, status FROM jobs.jobs WHERE id = $1",
          [id],
        )
      ).rows[0];
    const seenBy = (upstream: UpstreamEmulator, text: string) =>
      upstream.requests.filter((r) => JSON.stringify(r.body ?? "").includes(text)).map((r) => r.headers.authorization);

    it("then a model key the provider refuses is that workspace's 424, tried once per call, and another workspace on the same deployment is unaffected", async () => {
      const ent = await workspace("enterprise", { strict: "sk-tenant-revoked" });
      const other = await workspace("pro");
      const client = new OpenAI({ apiKey: ent.key, baseURL: gw.baseURL, maxRetries: 2 });
      const refusedCalls = () => strict.requests.filter((r) => r.headers.authorization === "Bearer sk-tenant-revoked").length;
      const messages = [{ role: "user" as const, content: "whose key is it?" }];

      // Streaming too: the refusal comes before the stream starts.
      const streamed = (await client.chat.completions.create({ model: "chat-strict", messages, stream: true }).catch((e: unknown) => e)) as InstanceType<
        typeof OpenAI.APIError
      >;
      expect(streamed).toBeInstanceOf(OpenAI.APIError);
      expect(streamed).not.toBeInstanceOf(OpenAI.AuthenticationError);
      expect(streamed.status).toBe(424);
      expect(streamed.message).toContain("`strict` refused this workspace's own credential");
      expect(refusedCalls()).toBe(1); // neither the gateway nor the SDK tried again
      for (let i = 0; i < 6; i++) {
        const error = (await client.chat.completions.create({ model: "chat-strict", messages }).catch((e: unknown) => e)) as InstanceType<
          typeof OpenAI.APIError
        >;
        expect(error.status).toBe(424);
        expect((error.error as { code?: string }).code).toBe("provider_credential_refused");
      }
      expect(refusedCalls()).toBeLessThanOrEqual(7);
      // The deployment's breaker is everyone's: it heard nothing of this workspace's key.
      const fine = await new OpenAI({ apiKey: other.key, baseURL: gw.baseURL, maxRetries: 0 }).chat.completions.create({ model: "chat-strict", messages });
      expect(fine.choices[0]?.message.content).toContain("whose key is it?");
      expect(strict.requests.at(-1)?.headers.authorization).toBe(`Bearer ${KEYS.strict}`);
    });

    it("then a tool key the provider refuses is that workspace's 424 too, after one upstream call", async () => {
      const ent = await workspace("enterprise", { webtool: "tvly-tenant-revoked" });
      const answer = await post(ent.key, "/tools/webtool/search", { query: "tenant isolation" });
      expect(answer.status).toBe(424);
      expect(answer.body).toMatchObject({
        error: { code: "provider_credential_refused", message: expect.stringContaining("`webtool` refused this workspace's own credential") },
      });
      expect(tavily.requests.filter((r) => r.headers.authorization === "Bearer tvly-tenant-revoked")).toHaveLength(1);
    });

    for (const change of ["deleted", "rotated"] as const) {
      it(`then an async job whose credential is ${change} while it waits for its retry runs the retry with the workspace's current credentials, and keeps none once finished`, async () => {
        const first = `sk-tenant-${change}-first`;
        const ent = await workspace("enterprise", { lenient: first });
        const text = `job of ${ent.workspaceId} (${change})`;
        lenient.script({ delayMs: 10_000 }); // the first attempt is held upstream past its deadline
        const created = await post(ent.key, "/async/chat/completions", { model: "chat-lenient", messages: [{ role: "user", content: text }] });
        expect(created.status).toBe(202);
        const id = created.body.id as string;
        await eventually(() => seenBy(lenient, text).length === 1, 20_000);
        expect(seenBy(lenient, text)).toEqual([`Bearer ${first}`]);
        if (db) {
          // While it can run: sealed under the master key, nowhere in clear.
          const row = await rowOf(id);
          expect(JSON.stringify(row)).not.toContain(first);
          expect(atRest.open(row?.credentials?.lenient?.sealed ?? "", providerCredentialSealing.context(ent.workspaceId, "lenient"))).toBe(first);
        }
        if (change === "deleted") await admin("DELETE", `/admin/workspaces/${ent.workspaceId}/credentials/lenient`);
        else await admin("PUT", `/admin/workspaces/${ent.workspaceId}/credentials/lenient`, { api_key: "sk-tenant-rotated-second" });

        const job = await finished(ent.key, id);
        expect(job?.status).toBe("completed");
        expect(seenBy(lenient, text)).toEqual([`Bearer ${first}`, change === "deleted" ? `Bearer ${KEYS.lenient}` : "Bearer sk-tenant-rotated-second"]);
        if (db) expect(await rowOf(id)).toEqual({ status: "completed", credentials: null });
      }, 60_000);
    }

    if (name === "the mesh") {
      it("then a research job whose credentials do not open in the tools service fails, and the platform's credential is not used instead", async () => {
        const ws = await workspace("enterprise");
        const id = `job_${"e2e".padEnd(32, "0")}`;
        const identity = { workspace_id: ws.workspaceId, key_id: ws.keyId, plan: "enterprise" as const, models: [["*"]], tools: ["webtool"] };
        const request = { format: "json" as const, body: { input: "unopenable credentials" } };
        // The job's row, as the jobs service writes it, then its work as the jobs service would publish
        // it, but with credentials no service can open.
        await db!.query(
          `INSERT INTO jobs.jobs (id, workspace_id, key_id, route, request, identity, status, attempts, dispatched_at, deadline_at, request_hash)
           VALUES ($1, $2, $3, 'tools/webtool/research', $4, $5, 'queued', 1, now(), now() + interval '1 hour', 'e2e')`,
          [id, ws.workspaceId, ws.keyId, JSON.stringify(request), JSON.stringify(identity)],
        );
        const meshEnv = gw.mesh!.env;
        const logger = createLogger({ service: "tenant-e2e", level: "silent" });
        const bus = await createNatsBus({
          url: meshEnv.NATS_URL as string,
          namespace: meshEnv.NATS_NAMESPACE as string,
          secret: gw.mesh!.internalSecret,
          logger,
        });
        const work: JobWork = { job_id: id, route: "tools/webtool/research", identity, credentials: "v1.not.a.sealed-value", request, attempt: 1 };
        await bus.enqueue("jobs.work.tools", work, { msgId: `${id}:1` });
        await bus.close();
        const answer = await eventually(async () => {
          const res = await fetch(`${gw.baseURL}/tools/webtool/research/${id}`, { headers: { authorization: `Bearer ${ws.key}` } });
          const body = (await res.json()) as { status: string; error?: { error?: { message?: string } } };
          return body.status === "failed" ? body : undefined;
        }, 30_000);
        expect(answer?.error?.error?.message).toContain("could not be opened");
        expect(tavily.requests.filter((r) => JSON.stringify(r.body ?? "").includes("unopenable credentials"))).toEqual([]);
        expect((await rowOf(id))?.credentials).toBeNull();
      }, 60_000);
    }

    if (name === "the embedded default") {
      it("then, once stopped, its data folder holds no finished job's credentials and no key in clear", async () => {
        await gw.stop();
        const pglite = await createPgliteDb({ dataDir: gw.pgliteDir });
        try {
          const { rows } = await pglite.query<{ status: string; credentials: unknown; transit_credentials: unknown; text: string }>(
            "SELECT status, credentials, transit_credentials, j::text AS text FROM jobs.jobs j",
          );
          expect(rows.length).toBeGreaterThanOrEqual(2);
          for (const row of rows) {
            expect(row).toMatchObject({ status: "completed", credentials: null, transit_credentials: null });
            expect(row.text).not.toMatch(/sk-tenant-(deleted|rotated)/);
          }
        } finally {
          await pglite.close();
          gw = { ...gw, stop: async () => {} };
        }
      }, 60_000);
    }
  });
}
