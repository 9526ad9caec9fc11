import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeNatsNamespace } from "@gw/bus";
import { secretForms } from "@gw/logger";
import { createTestDatabase, freePort, startOpenAIUpstream, testNatsUrl, testRedisUrl, uniqueNamespace, uniquePrefix, type TestDatabase } from "@gw/testkit";
import { adminClient, eventually } from "./harness";
import { openAIConfig, spawnGateway, type GatewayProcess } from "./gateway-process";

/**
 * A full run's output holds no key, token or credential: `pnpm start` and `pnpm start:mesh` at the
 * most verbose level, driven through typical and failing calls, every process's stdout and stderr
 * captured, and each secret looked for as is, URL-encoded, JSON-escaped and inside base64.
 */
const PLATFORM_KEY = "sk-secrets-platform-0123456789abcdef";
// Not shaped like any known provider key: only being told the value can hide these.
const REFUSED_KEY = "prov-refused-credential-77c1d2e3f4a5";
const ECHOED_KEY = "echo-provider-credential-9a8b7c6d5e4f";
const OWN_KEY = "sk-ent-own-credential-0123456789abcdef";
const MASTER_KEY = "secrets-e2e-master-key-0123456789abcdef";

let good: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let refusing: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let echoing: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let echoingOwn: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let configPath: string;

beforeAll(async () => {
  good = await startOpenAIUpstream({ apiKey: PLATFORM_KEY });
  refusing = await startOpenAIUpstream({ apiKey: "the-provider-wants-another-key" });
  echoing = await startOpenAIUpstream();
  echoingOwn = await startOpenAIUpstream();
  configPath = join(mkdtempSync(join(tmpdir(), "gw-secrets-cfg-")), "gateway.config.yaml");
  writeFileSync(
    configPath,
    openAIConfig({
      good: { url: good.url, keyEnv: "S_GOOD_KEY" },
      refusing: { url: refusing.url, keyEnv: "S_REFUSED_KEY" },
      echoing: { url: echoing.url, keyEnv: "S_ECHOED_KEY" },
      owned: { url: echoingOwn.url, keyEnv: "S_ECHOED_KEY" },
    }),
  );
});

afterAll(async () => {
  await Promise.all([good?.close(), refusing?.close(), echoing?.close(), echoingOwn?.close()]);
});

const providerEnv = () => ({
  S_GOOD_KEY: PLATFORM_KEY,
  S_REFUSED_KEY: REFUSED_KEY,
  S_ECHOED_KEY: ECHOED_KEY,
  GATEWAY_MASTER_KEY: MASTER_KEY,
  GATEWAY_CONFIG: configPath,
});

/** An upstream error whose text quotes the credential it was sent, as some providers' do. */
const echo = (status: number, key: string) => ({
  status,
  body: {
    error: {
      message: `Incorrect API key provided: ${key} (Authorization: Bearer ${key})`,
      type: "invalid_request_error",
      param: null,
      code: "invalid_api_key",
    },
  },
});

async function chat(baseURL: string, key: string, model: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hello" }] }),
  });
  await res.text();
  return res.status;
}

/** Typical and failing calls; returns the platform keys it made or used. */
async function drive(gw: GatewayProcess, adminToken: string): Promise<string[]> {
  const admin = adminClient(gw.adminURL, adminToken);
  const pro = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "secrets-pro", plan: "pro" });
  const valid = (await admin<{ key: string }>("POST", `/admin/workspaces/${pro.id}/keys`, {})).key;
  const ent = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "secrets-ent", plan: "enterprise" });
  const entKey = (await admin<{ key: string }>("POST", `/admin/workspaces/${ent.id}/keys`, {})).key;
  await admin("PUT", `/admin/workspaces/${ent.id}/credentials/owned`, { api_key: OWN_KEY });

  // A valid key: listing, a call, a stream.
  expect((await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${valid}` } })).status).toBe(200);
  expect(await chat(gw.baseURL, valid, "chat-good")).toBe(200);
  const stream = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${valid}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-good", stream: true, messages: [{ role: "user", content: "stream" }] }),
  });
  expect(stream.status).toBe(200);
  await stream.text();

  // A provider that refuses the gateway's credential, and one that quotes it back in its errors.
  expect(await chat(gw.baseURL, valid, "chat-refusing")).toBe(502);
  // Retried statuses are answered the same way every time, so the caller sees the failure (or the
  // route's breaker opens, which is fine: the first answers carried the credential in).
  const failWith = async (upstream: typeof echoing, model: string, key: string, status: number, callerKey: string) => {
    upstream.script(...Array.from({ length: 6 }, () => echo(status, key)));
    expect(await chat(gw.baseURL, callerKey, model)).toBeGreaterThanOrEqual(400);
  };
  for (const status of [429, 500, 400]) await failWith(echoing, "chat-echoing", ECHOED_KEY, status, valid);
  // An enterprise workspace's own credential, quoted back too.
  for (const status of [429, 500, 400]) await failWith(echoingOwn, "chat-owned", OWN_KEY, status, entKey);
  expect(echoing.requests.filter((r) => r.status === 429 && r.headers.authorization === `Bearer ${ECHOED_KEY}`).length).toBeGreaterThan(0);
  expect(echoingOwn.requests.filter((r) => r.status === 429 && r.headers.authorization === `Bearer ${OWN_KEY}`).length).toBeGreaterThan(0);

  // A revoked key.
  const revoked = await admin<{ id: string; key: string }>("POST", `/admin/workspaces/${pro.id}/keys`, { name: "to-revoke" });
  expect(await chat(gw.baseURL, revoked.key, "chat-good")).toBe(200);
  await admin("PATCH", `/admin/keys/${revoked.id}`, { status: "revoked" });
  await eventually(async () => (await chat(gw.baseURL, revoked.key, "chat-good")) === 401);

  // Wrong keys, in every place a client might put one (last: failed lookups slow a client down).
  const wrong = `gw_live_${randomBytes(30).toString("base64url").replace(/[-_]/g, "x").slice(0, 40)}`;
  expect(await chat(gw.baseURL, wrong, "chat-good")).toBe(401);
  expect((await fetch(`${gw.baseURL}/models`, { headers: { "x-api-key": wrong } })).status).toBe(401);
  expect((await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Basic ${Buffer.from(`user:${wrong}`).toString("base64")}` } })).status).toBe(401);
  expect((await fetch(`${gw.baseURL}/models?api_key=${wrong}`)).status).toBe(401);
  // Secrets sent to the wrong door by a confused client, some into fields that error messages quote.
  expect(await chat(gw.baseURL, valid, valid)).toBe(404);
  expect(await chat(gw.baseURL, valid, PLATFORM_KEY)).toBe(404);
  expect(await chat(gw.baseURL, adminToken, "chat-good")).toBe(401);
  expect(await chat(gw.baseURL, PLATFORM_KEY, "chat-good")).toBe(401);
  expect((await fetch(`${gw.adminURL}/admin/workspaces`, { headers: { authorization: `Bearer ${valid}` } })).status).toBe(401);

  return [valid, entKey, wrong, revoked.key];
}

/** Every form in which a secret could be found in the output. */
function forms(secret: string): string[] {
  return [
    ...secretForms(secret),
    Buffer.from(`Bearer ${secret}`).toString("base64"),
    Buffer.from(`user:${secret}`).toString("base64"),
    Buffer.from(secret).toString("hex"),
  ];
}

function expectNoSecret(output: string, secrets: Record<string, string>): void {
  const found = Object.entries(secrets).flatMap(([name, secret]) =>
    forms(secret)
      .filter((form) => output.includes(form))
      .map((form) => `${name} as ${form}`),
  );
  expect(found).toEqual([]);
}

describe("when the embedded default runs at trace level through typical and failing calls", () => {
  let gw: GatewayProcess;
  afterAll(async () => {
    await gw?.stop("SIGKILL");
  });

  it("then its output holds no key, token or credential, only the development key once in the banner", async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "gw-secrets-")), "data");
    const adminToken = "gw_admin_supplied-by-the-operator-0123456789";
    gw = await spawnGateway("main", { ...providerEnv(), GATEWAY_DATA_DIR: dataDir, GATEWAY_ADMIN_TOKEN: adminToken, LOG_LEVEL: "trace" }, { via: "tsx" });
    const banner = await gw.banner();
    const devKey = /dev key {8}(gw_live_\w+)/.exec(banner)?.[1] as string;
    expect(devKey).toBeDefined();
    const keys = await drive(gw, adminToken);
    expect(await gw.stop()).toBe(0);

    const output = gw.output();
    // Not vacuous: the failing calls were written, censored.
    // Not vacuous: it ran at the debug and trace levels, and the failing calls were written.
    expect(output).toContain('"level":20');
    expect(output).toContain("[redacted]");
    expect(output).toContain('"msg":"request rejected"');
    expect(output.split(devKey)).toHaveLength(2);
    expectNoSecret(output.replace(devKey, ""), {
      adminToken,
      internalSecret: readFileSync(join(dataDir, "internal-secret"), "utf8").trim(),
      masterKey: MASTER_KEY,
      platformKey: PLATFORM_KEY,
      refusedKey: REFUSED_KEY,
      echoedKey: ECHOED_KEY,
      ownKey: OWN_KEY,
      devKey,
      ...Object.fromEntries(keys.map((k, i) => [`key${i}`, k])),
    });
  }, 240_000);
});

describe("when the mesh runs at trace level through typical and failing calls", () => {
  let gw: GatewayProcess | undefined;
  let db: TestDatabase;
  let natsUrl: string;
  const namespace = uniqueNamespace();
  afterAll(async () => {
    await gw?.stop();
    await db?.drop();
    if (natsUrl) await removeNatsNamespace(natsUrl, namespace);
  });

  it("then no process's output holds a key, token or credential, and the generated admin token is only named by its file", async () => {
    db = await createTestDatabase();
    natsUrl = await testNatsUrl();
    const dataDir = join(mkdtempSync(join(tmpdir(), "gw-secrets-mesh-")), "data");
    gw = await spawnGateway(
      "mesh",
      {
        ...providerEnv(),
        DATABASE_URL: db.url,
        REDIS_URL: await testRedisUrl(),
        GATEWAY_REDIS_PREFIX: uniquePrefix("secrets"),
        NATS_URL: natsUrl,
        NATS_NAMESPACE: namespace,
        INFERENCE_PORT: String(await freePort()),
        TOOLS_PORT: String(await freePort()),
        JOBS_PORT: String(await freePort()),
        GATEWAY_DATA_DIR: dataDir,
        LOG_LEVEL: "trace",
      },
      { via: "tsx" },
    );
    const banner = await gw.banner(180_000);
    const tokenFile = join(dataDir, "admin-token");
    expect(banner).toContain(`admin token    in ${tokenFile}`);
    const adminToken = readFileSync(tokenFile, "utf8").trim();
    const keys = await drive(gw, adminToken);
    expect(await gw.stop()).toBe(0);

    const output = gw.output();
    expect(output).toContain('"level":20');
    expect(output).toContain("[redacted]");
    expect(output).toContain('"msg":"request rejected"');
    expectNoSecret(output, {
      adminToken,
      internalSecret: readFileSync(join(dataDir, "internal-secret"), "utf8").trim(),
      masterKey: MASTER_KEY,
      platformKey: PLATFORM_KEY,
      refusedKey: REFUSED_KEY,
      echoedKey: ECHOED_KEY,
      ownKey: OWN_KEY,
      ...Object.fromEntries(keys.map((k, i) => [`key${i}`, k])),
    });
  }, 300_000);
});
