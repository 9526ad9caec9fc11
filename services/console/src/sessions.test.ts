import { createPgliteDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsoleService, createConsoleService } from "./service";

/**
 * Session lifetimes and the link that starts one, against the service itself (PGlite, a clock the
 * test moves). Nothing here needs a workspace, so no admin API answers.
 */
const MINUTE = 60_000;
let db: Db;
let service: ConsoleService;
let base: string;
let now = Date.parse("2026-11-26T12:00:00Z");

beforeAll(async () => {
  db = await createPgliteDb();
  service = createConsoleService({
    db,
    gateway: { providers: {}, models: {}, plans: { plus: limits, pro: limits, enterprise: limits } },
    logger: createLogger({ service: "console-test", level: "silent" }),
    clock: () => now,
    settings: {
      host: "127.0.0.1",
      port: 0,
      internalSecret: "console-sessions-test-secret-0123456789",
      ingressAdminUrl: "http://127.0.0.1:9",
      sessions: { idleMs: 30 * MINUTE, absoluteMs: 120 * MINUTE },
    },
  });
  base = `${(await service.start()).url}/console/api`;
}, 60_000);
afterAll(async () => {
  await service?.stop();
  await db?.close();
});
const limits = { requests_per_minute: 1, tokens_per_minute: 1 };

async function signIn(): Promise<{ cookie: string; setCookie: string }> {
  const { link } = await service.createUser(`p${Math.random().toString(36).slice(2)}@example.com`);
  const res = await fetch(`${base}/sign-in/link`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: new URL(link, "http://x").hash.slice("#token=".length), password: "long enough password" }),
  });
  expect(res.status).toBe(200);
  const setCookie = res.headers.getSetCookie()[0] as string;
  return { cookie: setCookie.split(";")[0] as string, setCookie };
}
const session = (cookie: string) => fetch(`${base}/session`, { headers: { cookie } }).then((r) => r.status);

describe("console sessions", () => {
  it("when a session is made, then its cookie is HttpOnly, SameSite=Lax, scoped to /console, and Secure only behind TLS", async () => {
    const { setCookie } = await signIn();
    expect(setCookie).toMatch(/^gw_console=[A-Za-z0-9_-]{43};/);
    expect(setCookie).toContain("HttpOnly");
    expect(setCookie).toContain("SameSite=Lax");
    expect(setCookie).toContain("Path=/console");
    expect(setCookie).not.toContain("Secure");
  });

  it("when a session sits unused past its idle limit, then it has ended; used within it, it lives on", async () => {
    const { cookie } = await signIn();
    now += 29 * MINUTE;
    expect(await session(cookie)).toBe(200);
    now += 29 * MINUTE; // 58 minutes after sign-in, 29 after its last use
    expect(await session(cookie)).toBe(200);
    now += 30 * MINUTE;
    expect(await session(cookie)).toBe(401);
  });

  it("when a busy session reaches its absolute limit, then it has ended however recently it was used", async () => {
    const { cookie } = await signIn();
    for (let i = 0; i < 7; i++) {
      now += 17 * MINUTE;
      expect(await session(cookie)).toBe(200);
    }
    now += 2 * MINUTE; // 121 minutes after sign-in
    expect(await session(cookie)).toBe(401);
  });

  it("when a sign-in link has expired, then it opens nothing", async () => {
    const { link } = await service.createUser("late@example.com");
    now += 25 * 60 * MINUTE;
    const res = await fetch(`${base}/sign-in/link`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: new URL(link, "http://x").hash.slice("#token=".length), password: "long enough password" }),
    });
    expect(res.status).toBe(400);
  });

  it("when a sign-in names an email with a U+0000 (NUL), which Postgres's text cannot hold, then it is a 400 that names it, and the next sign-in works", async () => {
    const res = await fetch(`${base}/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "a\u0000@example.com", password: "long enough password" }),
    });
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect([res.status, body.error.type]).toEqual([400, "invalid_request_error"]);
    expect(body.error.message).toContain("U+0000");
    expect(await session((await signIn()).cookie)).toBe(200);
  });
});
