import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./run";

/** A stand-in admin API: records each request and answers with the next canned reply. */
let server: Server;
let adminUrl: string;
const requests: { method: string; url: string; body: unknown }[] = [];
let reply: { status: number; body: unknown } = { status: 200, body: {} };

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
    req.on("end", () => {
      requests.push({ method: req.method ?? "", url: req.url ?? "", body: raw ? JSON.parse(raw) : undefined });
      res.writeHead(reply.status, { "content-type": "application/json" }).end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  adminUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await runCli(argv, { adminUrl, adminToken: "t", out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

const apiKey = {
  id: "key_7",
  object: "api_key",
  workspace_id: "ws_1",
  name: "ci",
  prefix: "gw_live_ab",
  status: "active",
  models: null,
  tools: null,
  limits: { requests_per_minute: 30 },
  created_at: 1,
  updated_at: 2,
};

describe("runCli: key update", () => {
  it("when key update succeeds, then it PATCHes the key and prints the key's limit overrides", async () => {
    requests.length = 0;
    reply = { status: 200, body: apiKey };
    const { code, out } = await run(["key", "update", "key_7", "--rpm", "30"]);
    expect(code).toBe(0);
    expect(requests).toEqual([{ method: "PATCH", url: "/admin/keys/key_7", body: { limits: { requests_per_minute: 30 } } }]);
    expect(out).toContain("key_7");
    expect(out).toContain("rpm=30");
    expect(out).not.toContain("tpm=");
  });

  it("when the admin API refuses a limit above the workspace's, then exit 1 with its message", async () => {
    const message = "Invalid body: limits.requests_per_minute: the key's 700 exceeds the workspace's 600";
    reply = {
      status: 400,
      body: { error: { message, type: "invalid_request_error", param: "limits.requests_per_minute", code: "invalid_request" } },
    };
    const { code, err } = await run(["key", "update", "key_7", "--rpm", "700"]);
    expect(code).toBe(1);
    expect(err).toContain(`error (400): ${message}`);
  });
});

describe("runCli: user create", () => {
  it("when the console creates the person, then the single-use sign-in link is printed with what it is for", async () => {
    requests.length = 0;
    reply = {
      status: 201,
      body: {
        user: { id: "usr_1", email: "ops@example.com", name: null, operator: true, has_password: false },
        link: "https://gw.example/console/sign-in#token=abc",
      },
    };
    const { code, out } = await run(["user", "create", "--email", "ops@example.com", "--operator"]);
    expect(code).toBe(0);
    expect(requests).toEqual([{ method: "POST", url: "/admin/users", body: { email: "ops@example.com", operator: true } }]);
    expect(out).toContain("ops@example.com (operator)");
    expect(out).toContain("sign-in link: https://gw.example/console/sign-in#token=abc");
    expect(out).toContain("single use");
  });
});
