import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import { GatewayConfig, type PlanLimitsTable } from "@gw/config";
import { AdmissionAnswer, admissionHeader, admissionPurpose, AdmissionClaims } from "@gw/contracts";
import { createPgliteDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { SignedClaims } from "@gw/service-kit";
import { JOB_HOLD_MS } from "../budgets/budget-gate";
import { createIngressService, type IngressService } from "../service";
import { testIngressSettings } from "../testing/settings";

/**
 * `POST /internal/admissions` on a real ingress (PGlite, in-process bus, in-memory limits): a
 * batch's lines held to what their calls would meet at the door, in order, the first without room
 * ending the answer.
 */
const adminToken = "admissions-test-admin-token";
const SECRET = "admissions-test-internal-secret";
const logger = createLogger({ service: "admissions-test", level: "silent" });
const plans: PlanLimitsTable = {
  plus: { requests_per_minute: 3, tokens_per_minute: 1_000_000 },
  pro: { requests_per_minute: 100, tokens_per_minute: 1_000_000 },
  enterprise: { requests_per_minute: 100, tokens_per_minute: 1_000_000 },
};
const gateway = GatewayConfig.parse({
  providers: { openai: { kind: "openai", base_url: "http://127.0.0.1:9/v1" } },
  models: { gpt: { type: "chat", routes: [{ provider: "openai", model: "gpt-4o-mini" }], price: { input_per_mtok: 1000, output_per_mtok: 1000 } } },
  plans,
});
const claims = new SignedClaims(AdmissionClaims, SECRET, admissionPurpose);
const line = (text: string, model = "gpt") => ({ model, messages: [{ role: "user", content: text }], max_tokens: 10 });

let db: Db;
let bus: Bus;
let service: IngressService;
let adminUrl: string;

beforeAll(async () => {
  db = await createPgliteDb();
  bus = createInProcessBus({ logger });
  service = createIngressService({
    db,
    bus,
    logger,
    settings: testIngressSettings({ adminToken, internalSecret: SECRET, backendUrl: "http://127.0.0.1:9", plans }, { gateway }),
  });
  adminUrl = (await service.start()).adminUrl;
}, 60_000);
afterAll(async () => {
  await service?.stop();
  await bus?.close();
  await db?.close();
});

async function admin<T = { id: string }>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function newKey(workspace: object, key: object = {}) {
  const ws = await admin("POST", "/admin/workspaces", { name: "batches", plan: "pro", ...workspace });
  const created = await admin("POST", `/admin/workspaces/${ws.id}/keys`, key);
  return { workspaceId: ws.id, keyId: created.id };
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

async function ask(workspaceId: string, keyId: string, bodies: object[], signedFor = workspaceId) {
  const body = JSON.stringify({ workspace_id: workspaceId, key_id: keyId, route: "/v1/chat/completions", bodies });
  return fetch(`${adminUrl}/internal/admissions`, {
    method: "POST",
    headers: { "content-type": "application/json", [admissionHeader]: claims.sign({ workspace_id: signedFor, body_sha256: sha256(body) }) },
    body,
  });
}

const answerOf = async (res: Response) => {
  expect(res.status).toBe(200);
  return AdmissionAnswer.parse(await res.json());
};

describe("when the jobs service asks ingress to admit a batch's lines", () => {
  it("then lines are charged in order to the key's rate limits, and the first without room ends the answer with when to ask again", async () => {
    const { workspaceId, keyId } = await newKey({ plan: "plus" });
    const answer = await answerOf(await ask(workspaceId, keyId, [line("a"), line("b"), line("c"), line("d"), line("e")]));
    expect(answer.lines.map((l) => l.kind)).toEqual(["admitted", "admitted", "admitted", "wait"]);
    const wait = answer.lines[3] as { retry_after_ms: number };
    expect(wait.retry_after_ms).toBeGreaterThan(0);
    expect(wait.retry_after_ms).toBeLessThanOrEqual(60_000);
    // Each admitted line carries the token reservation its job settles.
    const first = answer.lines[0] as { ticket?: { workspace_id: string; key_id: string; tokens: number } };
    expect(first.ticket).toMatchObject({ workspace_id: workspaceId, key_id: keyId, tokens: expect.any(Number) });
    expect(first.ticket!.tokens).toBeGreaterThanOrEqual(10);
    expect(answer.identity).toMatchObject({ workspace_id: workspaceId, key_id: keyId, plan: "plus" });
    // The key's minute is spent: the next ask waits at once, as a live call would get a 429.
    expect((await answerOf(await ask(workspaceId, keyId, [line("f")]))).lines.map((l) => l.kind)).toEqual(["wait"]);
  });

  it("then a model outside the key's allow-list and a spent hard budget refuse their lines with the door's errors, and the rest still run", async () => {
    const { workspaceId, keyId } = await newKey({ budget: { monthly_usd: 0.01, mode: "hard" } }, { models: ["gpt"] });
    const answer = await answerOf(await ask(workspaceId, keyId, [line("x", "other"), line("y")]));
    expect(answer.lines[0]).toMatchObject({ kind: "refused", status: 403, error: { error: { code: "model_not_allowed" } } });
    // A line's worst case (10 output tokens and its input at $1000 per million) is over a one-cent budget.
    expect(answer.lines[1]).toMatchObject({ kind: "refused", status: 429 });
    const cheap = await newKey({}, { models: ["gpt"] });
    expect((await answerOf(await ask(cheap.workspaceId, cheap.keyId, [line("x", "other"), line("y")]))).lines.map((l) => l.kind)).toEqual([
      "refused",
      "admitted",
    ]);
  });

  it("then an admitted line's budget hold lives as long as a job's, since it is settled only when its job has run", async () => {
    const { workspaceId, keyId } = await newKey({ budget: { monthly_usd: 100, mode: "hard" } });
    const answer = await answerOf(await ask(workspaceId, keyId, [line("a")]));
    const hold = (answer.lines[0] as { ticket?: { budget?: { at: number; until?: number; reserved_nano: number } } }).ticket?.budget;
    expect(hold?.reserved_nano).toBeGreaterThan(0);
    expect(hold!.until! - hold!.at).toBe(JOB_HOLD_MS);
  });

  it("then a disabled or revoked key, or a key of another workspace, runs nothing", async () => {
    const { workspaceId, keyId } = await newKey({});
    await admin("PATCH", `/admin/keys/${keyId}`, { status: "disabled" });
    expect((await answerOf(await ask(workspaceId, keyId, [line("a"), line("b")]))).lines).toEqual([
      expect.objectContaining({ kind: "refused", status: 403 }),
      expect.objectContaining({ kind: "refused", status: 403 }),
    ]);
    await admin("PATCH", `/admin/keys/${keyId}`, { status: "revoked" });
    expect((await answerOf(await ask(workspaceId, keyId, [line("a")]))).lines).toEqual([expect.objectContaining({ kind: "refused", status: 401 })]);
    const other = await newKey({});
    expect((await answerOf(await ask(workspaceId, other.keyId, [line("a")]))).lines).toEqual([expect.objectContaining({ kind: "refused", status: 401 })]);
  });

  it("then a call without the jobs service's signature, or signed for another workspace, is refused before its body is read", async () => {
    const { workspaceId, keyId } = await newKey({});
    const unsigned = await fetch(`${adminUrl}/internal/admissions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({ workspace_id: workspaceId, key_id: keyId, route: "/v1/chat/completions", bodies: [line("a")] }),
    });
    expect(unsigned.status).toBe(401);
    expect((await ask(workspaceId, keyId, [line("a")], "ws_someone_else")).status).toBe(401);
    // A signature is for one body: the same header on another ask (another key's, say) is refused.
    const signed = JSON.stringify({ workspace_id: workspaceId, key_id: keyId, route: "/v1/chat/completions", bodies: [line("a")] });
    const header = claims.sign({ workspace_id: workspaceId, body_sha256: sha256(signed) });
    const replayed = await fetch(`${adminUrl}/internal/admissions`, {
      method: "POST",
      headers: { "content-type": "application/json", [admissionHeader]: header },
      body: signed.replace(keyId, "key_other"),
    });
    expect(replayed.status).toBe(401);
    const malformedBody = JSON.stringify({ workspace_id: workspaceId, key_id: keyId, route: "/v1/audio/speech", bodies: [] });
    const malformed = await fetch(`${adminUrl}/internal/admissions`, {
      method: "POST",
      headers: { "content-type": "application/json", [admissionHeader]: claims.sign({ workspace_id: workspaceId, body_sha256: sha256(malformedBody) }) },
      body: malformedBody,
    });
    expect(malformed.status).toBe(400);
  });
});
