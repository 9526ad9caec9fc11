import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectAsClient, startOpenAIUpstream, withClient } from "@gw/testkit";
import type { UpstreamEmulator } from "@gw/testkit";
import { adminClient, eventually, startTestMesh } from "./harness";
import type { RunningMesh } from "./harness";
import { newWorkspaceKey, testPlans } from "./targets";

/**
 * Whoever can reach the mesh's NATS can publish. Messages that do not carry the bus's signature
 * (GATEWAY_INTERNAL_SECRET) are refused by every service, so a job cannot be completed, work
 * started, tokens settled or cached identities dropped from outside.
 */
const UPSTREAM_KEY = "sk-nats-forgery";
const MARK = "FORGED_BY_A_STRANGER";
let oa: UpstreamEmulator;
let gw: RunningMesh;
type Raw = Awaited<ReturnType<typeof connectAsClient>>;
let raw: Raw;
let ns: string;

beforeAll(async () => {
  oa = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
  const config = `
providers:
  oa: { kind: openai, base_url: "${oa.url}", api_key_env: FORGERY_OA, max_retries: 0 }
models:
  gpt: { type: chat, routes: [{ provider: oa, model: gpt-4o-mini }] }
${testPlans}`;
  // A long identity cache: only a broadcast can make ingress forget a key within the test.
  gw = await startTestMesh(config, { FORGERY_OA: UPSTREAM_KEY, GATEWAY_KEY_CACHE_TTL_MS: "300000" });
  raw = await connectAsClient(gw.env.NATS_URL ?? "");
  ns = gw.env.NATS_NAMESPACE ?? "";
}, 180_000);
afterAll(async () => {
  await raw?.close();
  await gw?.stop();
  await oa?.close();
});

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const jobId = () => `job_${randomBytes(16).toString("hex")}`;
/** The service's log line for a refused message on this subject (LOG_LEVEL warn keeps it). */
const refusedOn = (subject: string) =>
  new RegExp(
    `"subject":"${subject.replace(/\./g, "\\.")}"[^\\n]*without a valid signature|without a valid signature[^\\n]*"subject":"${subject.replace(/\./g, "\\.")}"`,
  );

async function call(key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${gw.baseURL}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("when messages are forged on the mesh's NATS", () => {
  it("then a forged completion leaves the job as it was and forged work never runs, while the real job completes", async () => {
    const { key, workspaceId, keyId } = await newWorkspaceKey(gw, { name: "forgery", models: ["*"] });
    oa.script({ delayMs: 3_000 });
    const created = await call(key, "POST", "/async/chat/completions", { model: "gpt", messages: [{ role: "user", content: "the real prompt" }] });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const id = created.body.id as string;
    const js = raw.jetstream();
    // A "completed" event for the real job, with a result of the forger's choosing.
    await js.publish(`${ns}.jobs.events`, enc({ job_id: id, status: "completed", attempt: 1, at: Date.now(), result: { forged: MARK } }), {
      msgID: `forged-event-${id}`,
    });
    // Work the jobs service never created, under the real workspace's identity.
    const work = {
      job_id: jobId(),
      route: "chat/completions",
      identity: { workspace_id: workspaceId, key_id: keyId, plan: "pro", models: [["*"]], tools: [] },
      request: { format: "json", body: { model: "gpt", messages: [{ role: "user", content: MARK }] } },
      attempt: 1,
    };
    await js.publish(`${ns}.jobs.work.inference`, enc(work), { msgID: `forged-work-${work.job_id}` });
    await eventually(() => refusedOn("jobs.events").test(gw.output()) && refusedOn("jobs.work.inference").test(gw.output()), 30_000);

    const now = await call(key, "GET", `/async/chat/completions/${id}`);
    expect(["queued", "processing"]).toContain(now.body.status);
    const done = await eventually(async () => {
      const job = (await call(key, "GET", `/async/chat/completions/${id}`)).body;
      return job.status === "completed" || job.status === "failed" ? job : undefined;
    }, 60_000);
    expect(done?.status).toBe("completed");
    expect(JSON.stringify(done?.result)).toContain("the real prompt");
    expect(JSON.stringify(done?.result)).not.toContain(MARK);
    expect(oa.requests.some((r) => JSON.stringify(r.body).includes(MARK))).toBe(false);
    expect(gw.output()).not.toContain(MARK);
  }, 120_000);

  it("then a forged settlement is refused, and a forged key change leaves ingress's cache alone until a real one comes", async () => {
    const { key, keyId, workspaceId } = await newWorkspaceKey(gw, { name: "forgery-cache", models: ["*"] });
    expect((await call(key, "GET", "/models")).status).toBe(200); // now cached for 300 s
    // Revoked in the database behind ingress's back: only a broadcast can make it look again.
    await withClient(gw.env.DATABASE_URL ?? "", (c) => c.query("update ingress.api_keys set status = 'revoked' where id = $1", [keyId]));
    raw.publish(`${ns}.identity.changed`, enc({ kind: "key", id: keyId, at: Date.now() }));
    await raw
      .jetstream()
      .publish(`${ns}.limits.settle`, enc({ job_id: jobId(), ticket: { workspace_id: workspaceId, key_id: keyId, bucket: 1, tokens: 0 }, used: 900_000 }), {
        msgID: `forged-settle-${keyId}`,
      });
    await eventually(() => /broadcast without a valid signature/.test(gw.output()) && refusedOn("limits.settle").test(gw.output()), 30_000);
    expect((await call(key, "GET", "/models")).status).toBe(200);

    await adminClient(gw.adminURL, gw.adminToken)("PATCH", `/admin/keys/${keyId}`, { status: "revoked" });
    await eventually(async () => (await call(key, "GET", "/models")).status === 401, 10_000);
  }, 60_000);
});
