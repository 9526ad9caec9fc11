import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "@gw/config";
import { connectAsClient, natsServerAvailable, nkeys, startOpenAIUpstream, startPrivateNats } from "@gw/testkit";
import type { PrivateNats, UpstreamEmulator } from "@gw/testkit";
import { meshServices } from "../../services/embedded/src/mesh-processes";
import { adminClient, eventually, startTestMesh } from "./harness";
import type { RunningMesh } from "./harness";
import { newWorkspaceKey, testPlans } from "./targets";

/**
 * The mesh against a NATS server locked down the way docs/nats.md says: the shipped
 * deploy/nats/gateway-auth.conf, one NKey user per service with only the subjects it uses, each
 * service given its own seed through NATS_CREDS. An async job exercises every subject.
 */
const UPSTREAM_KEY = "sk-nats-auth";
let oa: UpstreamEmulator;
beforeAll(async () => {
  oa = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
});
afterAll(async () => {
  await oa?.close();
});
const config = () => `
providers:
  oa: { kind: openai, base_url: "${oa.url}", api_key_env: NATS_AUTH_OA, max_retries: 0 }
models:
  gpt: { type: chat, routes: [{ provider: oa, model: gpt-4o-mini }] }
${testPlans}`;

interface Job {
  id: string;
  status: string;
  result?: { choices?: { message?: { content?: string } }[] };
}

async function call(gw: RunningMesh, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${gw.baseURL}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe.skipIf(!natsServerAvailable())("when the mesh runs against a NATS server with per-service credentials", () => {
  let nats: PrivateNats;
  let gw: RunningMesh;
  let dir: string;
  const seeds: Record<string, string> = {};

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gw-nats-auth-"));
    const env: Record<string, string> = {};
    const serviceEnv: Record<string, Record<string, string>> = {};
    for (const name of meshServices) {
      const user = nkeys.createUser();
      seeds[name] = new TextDecoder().decode(user.getSeed());
      env[`GW_NATS_${name.toUpperCase()}_NKEY`] = user.getPublicKey();
      const path = join(dir, `${name}.nk`);
      writeFileSync(path, `${seeds[name]}\n`, { mode: 0o600 });
      serviceEnv[name] = { NATS_CREDS: path };
    }
    nats = await startPrivateNats({
      auth: {
        config: 'include "gateway-auth.conf"',
        files: { "gateway-auth.conf": readFileSync(join(repoRoot(), "deploy", "nats", "gateway-auth.conf"), "utf8") },
        env,
      },
    });
    // The shipped permissions name namespace "gw" (subjects gw.…, stream GW_WORK); this server is ours alone.
    gw = await startTestMesh(config(), { NATS_AUTH_OA: UPSTREAM_KEY, NATS_URL: nats.url, NATS_NAMESPACE: "gw" }, { serviceEnv });
  }, 180_000);
  afterAll(async () => {
    await gw?.stop();
    await nats?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("then an async job completes end to end, key changes reach ingress, and the server saw no permission violation", async () => {
    const { key, workspaceId } = await newWorkspaceKey(gw, { name: "nats-auth", models: ["*"] });
    const created = await call(gw, key, "POST", "/async/chat/completions", { model: "gpt", messages: [{ role: "user", content: "locked down" }] });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const id = created.body.id as string;
    const done = await eventually(async () => {
      const job = (await call(gw, key, "GET", `/async/chat/completions/${id}`)).body as unknown as Job;
      return job.status === "completed" || job.status === "failed" ? job : undefined;
    }, 60_000);
    expect(done?.status).toBe("completed");
    expect(done?.result?.choices?.[0]?.message?.content).toContain("locked down");

    // identity.changed: ingress publishes it on a key change and every replica's cache hears it.
    const admin = adminClient(gw.adminURL, gw.adminToken);
    const other = await admin<{ id: string; key: string }>("POST", `/admin/workspaces/${workspaceId}/keys`, {});
    expect((await call(gw, other.key, "GET", "/models")).status).toBe(200);
    await admin("PATCH", `/admin/keys/${other.id}`, { status: "revoked" });
    await eventually(async () => (await call(gw, other.key, "GET", "/models")).status === 401, 10_000);

    expect(nats.output()).not.toMatch(/Violation/i);
    expect(gw.output()).not.toMatch(/PERMISSIONS_VIOLATION|Permissions Violation|AUTHORIZATION_VIOLATION/i);
  }, 120_000);

  it("then a client without credentials is refused, and a service's credentials cannot publish another's subjects", async () => {
    await expect(connectAsClient(nats.url)).rejects.toThrow(/Authorization Violation/i);
    const nc = await connectAsClient(nats.url, seeds.inference);
    try {
      // inference reports job events; settling tokens is jobs's, starting research is jobs's and tools's.
      nc.publish("gw.limits.settle", "{}");
      nc.publish("gw.jobs.work.tools", "{}");
      await nc.flush();
      await eventually(
        () => /Publish Violation.*gw\.limits\.settle/.test(nats.output()) && /Publish Violation.*gw\.jobs\.work\.tools/.test(nats.output()),
        10_000,
      );
    } finally {
      await nc.close();
    }
  });
});

describe("when a service starts with a bad NATS_CREDS", () => {
  it.each([
    ["missing", () => "/nonexistent/gw-nats.creds", /NATS_CREDS: cannot read \/nonexistent\/gw-nats\.creds \(ENOENT\)/],
    [
      "garbled",
      (dir: string) => {
        const path = join(dir, "garbled.creds");
        writeFileSync(path, "SUthis-is-not-a-seed-at-all");
        return path;
      },
      /NATS_CREDS: .*garbled\.creds holds neither a NATS \.creds file nor an NKey user seed/,
    ],
  ] as const)(
    "then a %s file is one fatal line naming NATS_CREDS, and it exits 1",
    (_kind, makePath, expected) => {
      const dir = mkdtempSync(join(tmpdir(), "gw-nats-creds-"));
      try {
        const result = spawnSync(process.execPath, ["--import", "tsx", join(repoRoot(), "services", "inference", "src", "main.ts")], {
          cwd: repoRoot(),
          env: { PATH: process.env.PATH, GATEWAY_INTERNAL_SECRET: "s".repeat(32), NATS_URL: "nats://127.0.0.1:1", NATS_CREDS: makePath(dir) },
          encoding: "utf8",
          timeout: 60_000,
        });
        expect(result.status).toBe(1);
        const lines = `${result.stdout}${result.stderr}`.trim().split("\n");
        expect(lines).toHaveLength(1);
        expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ level: 60, msg: expect.stringMatching(expected) });
        expect(lines[0]).not.toContain("this-is-not-a-seed");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    60_000,
  );
});
