import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIUpstream } from "@gw/testkit";
import { adminClient, eventually } from "./harness";
import { openAIConfig, spawnGateway, type GatewayProcess } from "./gateway-process";
import { pgliteTemplate } from "./pglite-template";

/**
 * The embedded default (`pnpm start`, on PGlite; here its bundle) as separate processes on one data folder: one
 * gateway per folder, what it writes survives a restart, its generated admin token is kept in a
 * 0600 file and never printed, and a folder it cannot open stops it with what to do.
 */
let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let configPath: string;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  upstream = await startOpenAIUpstream();
  configPath = join(mkdtempSync(join(tmpdir(), "gw-folder-cfg-")), "gateway.config.yaml");
  writeFileSync(configPath, openAIConfig({ up: { url: upstream.url, keyEnv: "FOLDER_UP_KEY" } }));
});

afterAll(async () => {
  await Promise.all(running.map((g) => g.stop("SIGKILL")));
  await upstream?.close();
});

async function start(dataDir: string, env: Record<string, string> = {}): Promise<GatewayProcess> {
  const gw = await spawnGateway("main", {
    GATEWAY_DATA_DIR: dataDir,
    GATEWAY_CONFIG: configPath,
    FOLDER_UP_KEY: "sk-folder-upstream-key",
    LOG_LEVEL: "info",
    ...env,
  });
  running.push(gw);
  return gw;
}

const freshDataDir = () => join(mkdtempSync(join(tmpdir(), "gw-folder-")), "data");
/**
 * A folder holding a migrated database no gateway has started on yet: what a test needs when the
 * database itself is not what it checks (the first test's start is the one on an empty folder).
 */
const seededDataDir = async () => {
  const dataDir = freshDataDir();
  mkdirSync(dataDir);
  cpSync(await pgliteTemplate(), join(dataDir, "pglite"), { recursive: true });
  return dataDir;
};
const listing = (dir: string) =>
  readdirSync(dir, { recursive: true, encoding: "utf8" })
    .sort()
    .map((f) => `${f} ${statSync(join(dir, f)).isFile() ? readFileSync(join(dir, f)).toString("base64").slice(0, 64) : "dir"}`);

describe("when the embedded gateway keeps its data folder", () => {
  it("then its generated admin token is written 0600 and only its path printed, is read back on restart, and workspaces created before the restart are there after it", async () => {
    const dataDir = freshDataDir();
    const first = await start(dataDir);
    const banner = await first.banner();
    const tokenFile = join(dataDir, "admin-token");
    const token = readFileSync(tokenFile, "utf8").trim();
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, "internal-secret")).mode & 0o777).toBe(0o600);
    expect(banner).toContain(`admin token    in ${tokenFile}`);
    expect(first.output()).not.toContain(token);
    expect(first.output()).not.toContain(readFileSync(join(dataDir, "internal-secret"), "utf8").trim());
    // The development key is shown this once, saying so.
    expect(banner).toMatch(/dev key {8}gw_live_\w+/);
    expect(banner).toContain("never again");

    const admin = adminClient(first.adminURL, token);
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await admin<{ id: string }>("POST", "/admin/workspaces", { name: `before-restart-${i}`, plan: "pro" })).id);
    expect(await first.stop()).toBe(0);
    expect(existsSync(join(dataDir, "gateway.lock"))).toBe(false);

    const second = await start(dataDir);
    const again = await second.banner();
    expect(again).toContain("workspaces     6 already exist");
    expect(again).not.toMatch(/gw_live_/);
    expect(readFileSync(tokenFile, "utf8").trim()).toBe(token);
    const list = await adminClient(second.adminURL, token)<{ data: Array<{ id: string }> }>("GET", "/admin/workspaces");
    expect(list.data.map((w) => w.id)).toEqual(expect.arrayContaining(created));
    expect(await second.stop()).toBe(0);
  }, 180_000);

  it("then the operator's own GATEWAY_ADMIN_TOKEN is used, never printed, never written", async () => {
    const dataDir = await seededDataDir();
    const supplied = "operator-chosen-admin-token-5f3a9c";
    const gw = await start(dataDir, { GATEWAY_ADMIN_TOKEN: supplied, LOG_LEVEL: "trace" });
    const banner = await gw.banner();
    expect(banner).toContain("admin token    from GATEWAY_ADMIN_TOKEN (not shown)");
    await adminClient(gw.adminURL, supplied)("GET", "/admin/workspaces");
    expect(await gw.stop()).toBe(0);
    expect(gw.output()).not.toContain(supplied);
    expect(gw.output()).not.toContain(Buffer.from(supplied).toString("base64").slice(0, 20));
    expect(existsSync(join(dataDir, "admin-token"))).toBe(false);
  }, 180_000);

  it("then a second gateway on the same folder exits 1 naming the first's pid and URL, touching nothing, while the first keeps serving", async () => {
    const dataDir = await seededDataDir();
    const first = await start(dataDir);
    await first.banner();
    const before = listing(dataDir);
    const second = await start(dataDir);
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(`is in use by another gateway: pid ${first.pid}`);
    expect(second.output()).toContain(`serving http://127.0.0.1:${first.ports.public}`);
    expect(listing(dataDir)).toEqual(before);
    // The first still serves and writes.
    const token = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
    await adminClient(first.adminURL, token)("POST", "/admin/workspaces", { name: "after-refusal", plan: "pro" });
    expect((await fetch(`http://127.0.0.1:${first.ports.public}/readyz`)).status).toBe(200);
    await expect(fetch(`http://127.0.0.1:${second.ports.public}/readyz`)).rejects.toThrow();
    expect(await first.stop()).toBe(0);
  }, 180_000);

  it("then a gateway killed without a chance to release its lock is taken over by the next start, which says so", async () => {
    const dataDir = await seededDataDir();
    const first = await start(dataDir);
    await first.banner();
    await first.stop("SIGKILL");
    expect(existsSync(join(dataDir, "gateway.lock"))).toBe(true);
    const second = await start(dataDir);
    await second.banner();
    // The line is a log line, written by the logger within a second of the banner.
    await eventually(() => second.output().includes(`took over the data folder's lock from pid ${first.pid}`), 10_000);
    expect(await second.stop()).toBe(0);
  }, 180_000);
});

describe("when the embedded gateway's data folder cannot be opened", () => {
  it("then files that are not a database in its database folder stop the start with what to do, and are left as they were", async () => {
    const dataDir = freshDataDir();
    const pglite = join(dataDir, "pglite");
    mkdirSync(pglite, { recursive: true });
    writeFileSync(join(pglite, "base"), Buffer.alloc(4096, 0xab));
    writeFileSync(join(pglite, "pg_control"), "garbage");
    const before = listing(pglite);
    const gw = await start(dataDir);
    expect(await gw.exited).toBe(1);
    expect(gw.output()).toContain(`The database folder ${pglite} is not empty but holds no database`);
    expect(gw.output()).toContain(`Move it aside (mv ${pglite}`);
    expect(listing(pglite)).toEqual(before);
    expect(existsSync(join(dataDir, "gateway.lock"))).toBe(false);
  }, 180_000);

  it("then a database folder this user may not read stops the start naming it and the permissions fix, and it is not wiped", async () => {
    const dataDir = await seededDataDir();
    const pglite = join(dataDir, "pglite");
    const before = listing(pglite);
    chmodSync(pglite, 0o000);
    try {
      const gw = await start(dataDir);
      expect(await gw.exited).toBe(1);
      expect(gw.output()).toContain(`The database folder ${pglite} cannot be read and written by this user`);
      expect(gw.output()).toContain("chmod -R u+rwX");
    } finally {
      chmodSync(pglite, 0o700);
    }
    expect(listing(pglite)).toEqual(before);
  }, 180_000);

  it("then a damaged database stops the start telling to move it aside, and it is not overwritten", async () => {
    const dataDir = await seededDataDir();
    const pglite = join(dataDir, "pglite");
    writeFileSync(join(pglite, "global", "pg_control"), Buffer.alloc(8192, 0x5a));
    const before = listing(pglite);
    const gw = await start(dataDir);
    expect(await gw.exited).toBe(1);
    expect(gw.output()).toContain(`The database in ${pglite} could not be opened`);
    expect(gw.output()).toMatch(/Move it aside \(mv \S+ \S+\.broken-\d{8}T\d{6}\)/);
    expect(listing(pglite)).toEqual(before);
  }, 180_000);
});
