import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveAdminToken } from "./admin-token";
import { runCli } from "./run";

/** A stand-in admin API that accepts one token and records the ones it was sent. */
let server: Server;
let adminUrl: string;
const sent: string[] = [];
const accepted = "gw_admin_from-the-data-folder-0123";

beforeAll(async () => {
  server = createServer((req, res) => {
    sent.push(req.headers.authorization ?? "");
    const ok = req.headers.authorization === `Bearer ${accepted}`;
    res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
    res.end(JSON.stringify(ok ? { object: "list", data: [] } : { error: { message: "Invalid admin token", type: "authentication_error" } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  adminUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function cli(env: { GATEWAY_ADMIN_TOKEN?: string; GATEWAY_DATA_DIR?: string }) {
  const token = resolveAdminToken(env);
  let out = "";
  let err = "";
  const code = await runCli(["workspace", "list"], {
    adminUrl,
    adminToken: token.token,
    adminTokenFile: "path" in token ? token.path : undefined,
    adminTokenProblem: "problem" in token ? token.problem : undefined,
    out: (t) => (out += t),
    err: (t) => (err += t),
  });
  return { code, out, err };
}

function dataDirWithToken(token: string): string {
  const dir = mkdtempSync(join(tmpdir(), "gw-cli-"));
  writeFileSync(join(dir, "admin-token"), `${token}\n`, { mode: 0o600 });
  return dir;
}

describe("the CLI's admin token", () => {
  it("when GATEWAY_ADMIN_TOKEN is unset, then the token the gateway kept in the data folder is used", async () => {
    sent.length = 0;
    const { code } = await cli({ GATEWAY_DATA_DIR: dataDirWithToken(accepted) });
    expect(code).toBe(0);
    expect(sent).toEqual([`Bearer ${accepted}`]);
  });

  it("when GATEWAY_ADMIN_TOKEN is set, then it is used and the file is not read", async () => {
    sent.length = 0;
    expect(
      resolveAdminToken({ GATEWAY_ADMIN_TOKEN: "from-env", GATEWAY_DATA_DIR: "/nonexistent" }, () => {
        throw new Error("must not read");
      }),
    ).toEqual({ token: "from-env", from: "env" });
    const { code, err } = await cli({ GATEWAY_ADMIN_TOKEN: "operator-token", GATEWAY_DATA_DIR: dataDirWithToken(accepted) });
    expect(code).toBe(1);
    expect(sent).toEqual(["Bearer operator-token"]);
    expect(err).not.toContain("admin-token");
  });

  it("when neither is there, then it exits 2 naming the variable and the file it looked for, calling nothing", async () => {
    sent.length = 0;
    const dir = mkdtempSync(join(tmpdir(), "gw-cli-"));
    const { code, err } = await cli({ GATEWAY_DATA_DIR: dir });
    expect(code).toBe(2);
    expect(err).toContain(`GATEWAY_ADMIN_TOKEN is not set and ${join(dir, "admin-token")} does not exist`);
    expect(sent).toEqual([]);
  });

  it("when the file's token is refused, then the error says where it came from", async () => {
    const { code, err } = await cli({ GATEWAY_DATA_DIR: dataDirWithToken("gw_admin_an-old-token-0123456789") });
    expect(code).toBe(1);
    expect(err).toContain("error (401): Invalid admin token");
    expect(err).toContain("the admin token was read from");
  });
});
