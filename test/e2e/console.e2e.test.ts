import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mayDo, type WorkspaceAction, type WorkspaceRole, workspaceRoles } from "@gw/contracts";
import { type SmtpReceiver, startOpenAIUpstream, startSmtpReceiver, type TestOidcProvider, walkOidcSignIn } from "@gw/testkit";
import { type ConsoleAnswer, ConsoleBrowser, signInOperator, startConsoleGateway } from "./console-client";
import { eventually } from "./harness";
import { type GatewayTarget, targetNames, testPlans } from "./targets";

/**
 * The console's API end to end, in the mesh and the embedded default: the whole permission matrix
 * (every role × every workspace action, allowed and refused, from the table in @gw/contracts), the
 * plan that makes roles inert, and the attacks a console must stand: session fixation, CSRF,
 * password guessing, a link used twice, one workspace's member reaching another's by id.
 */
const UPSTREAM_KEY = "sk-upstream-console";
const PASSWORD = "correct horse battery staple";
let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
}, 60_000);
afterAll(async () => {
  await upstream?.close();
});

const config = () => `
providers:
  primary: { kind: openai, base_url: "${upstream.url}", api_key_env: E2E_UPSTREAM_KEY, timeout_ms: 10000 }
models:
  chat-console:
    type: chat
    routes: [{ provider: primary, model: gpt-4o-mini }]
    price: { input_per_mtok: 1000, output_per_mtok: 1000 }
${testPlans}`;

let unique = 0;
const email = (who: string) => `${who}-${Date.now().toString(36)}-${unique++}@example.com`;

/** Each action's probe: a call that needs exactly that action, and whether its answer shows it was allowed. */
interface Probe {
  method: string;
  path: (ws: string, fixtures: Fixtures) => string;
  body?: (fixtures: Fixtures) => unknown;
  /** Allowed is a 2xx by default; a probe may look closer (bodies are left out, not refused). */
  allowed?: (answer: ConsoleAnswer) => boolean;
}
interface Fixtures {
  /** A key some other member (the owner) created. */
  othersKey: string;
  /** A key the prober created, when their role may create keys. */
  ownKey?: string;
  /** A request whose bodies were captured. */
  requestId: string;
}

const probes: Record<Exclude<WorkspaceAction, "workspace.delete">, Probe> = {
  "workspace.read": { method: "GET", path: (ws) => `/workspaces/${ws}` },
  "workspace.settings": { method: "PATCH", path: (ws) => `/workspaces/${ws}`, body: () => ({ timezone: "Europe/Berlin" }) },
  "team.read": { method: "GET", path: (ws) => `/workspaces/${ws}/members` },
  "team.manage": { method: "POST", path: (ws) => `/workspaces/${ws}/invitations`, body: () => ({ email: email("probe"), role: "viewer" }) },
  "models.read": { method: "GET", path: (ws) => `/workspaces/${ws}/models` },
  "keys.read": { method: "GET", path: (ws) => `/workspaces/${ws}/keys` },
  "keys.create": { method: "POST", path: (ws) => `/workspaces/${ws}/keys`, body: () => ({ name: "probe" }) },
  "keys.manage_own": {
    method: "PATCH",
    path: (ws, f) => `/workspaces/${ws}/keys/${f.ownKey ?? f.othersKey}`,
    body: () => ({ name: "renamed by its creator" }),
  },
  "keys.manage": { method: "PATCH", path: (ws, f) => `/workspaces/${ws}/keys/${f.othersKey}`, body: () => ({ name: "renamed" }) },
  "limits.manage": { method: "PATCH", path: (ws) => `/workspaces/${ws}`, body: () => ({ limits: { requests_per_minute: 5000 } }) },
  "budgets.read": { method: "GET", path: (ws) => `/workspaces/${ws}/budget` },
  "budgets.manage": { method: "PATCH", path: (ws) => `/workspaces/${ws}`, body: () => ({ budget: { monthly_usd: 1000, mode: "soft" } }) },
  "credentials.manage": { method: "GET", path: (ws) => `/workspaces/${ws}/credentials` },
  "logging.manage": { method: "PATCH", path: (ws) => `/workspaces/${ws}`, body: () => ({ logging: { bodies: true, retention_days: 7 } }) },
  "usage.read": { method: "GET", path: (ws) => `/workspaces/${ws}/usage?group_by=model` },
  "statements.read": { method: "GET", path: (ws) => `/workspaces/${ws}/statement?month=2026-11` },
  "logs.read": { method: "GET", path: (ws) => `/workspaces/${ws}/logs` },
  "logs.bodies": {
    method: "GET",
    path: (ws, f) => `/workspaces/${ws}/logs/${f.requestId}`,
    allowed: (answer) => answer.status === 200 && answer.body.request_body !== undefined,
  },
  "audit.read": { method: "GET", path: (ws) => `/workspaces/${ws}/audit` },
};

for (const name of targetNames) {
  describe(`the console's API in ${name}`, { timeout: 240_000 }, () => {
    let gw: GatewayTarget;
    let origin: string;
    let operator: ConsoleBrowser;
    let idp: TestOidcProvider;
    let mail: SmtpReceiver;
    const idpAccounts: Record<string, { email: string; email_verified?: boolean }> = {};

    beforeAll(async () => {
      mail = await startSmtpReceiver();
      ({ gw, origin, idp } = await startConsoleGateway(
        name,
        config(),
        { GATEWAY_SMTP_URL: mail.url, GATEWAY_SMTP_FROM: "Gateway <gateway@example.com>", E2E_UPSTREAM_KEY: UPSTREAM_KEY, LOG_LEVEL: "warn" },
        idpAccounts,
      ));
      operator = await signInOperator(origin, gw.adminURL, gw.adminToken, email("operator"), PASSWORD);
    }, 240_000);
    afterAll(async () => {
      await gw?.stop();
      await idp?.close();
      await mail?.close();
    });

    const newWorkspace = async (plan = "enterprise") => {
      const created = await operator.call<{ id: string }>("POST", "/workspaces", { name: `console ${plan}`, plan });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return created.body.id;
    };
    /** A person invited by the operator with `role`, signed in through the invitation's link. */
    const member = async (ws: string, role: WorkspaceRole) => {
      const invited = await operator.call<{ link: string }>("POST", `/workspaces/${ws}/invitations`, { email: email(role), role });
      expect(invited.status, JSON.stringify(invited.body)).toBe(201);
      const browser = new ConsoleBrowser(origin);
      const signed = await browser.acceptLink(invited.body.link, PASSWORD);
      expect(signed.status, JSON.stringify(signed.body)).toBe(200);
      return browser;
    };

    it("then every role may do exactly what the matrix says in an Enterprise workspace, and an outsider finds nothing (404)", async () => {
      const ws = await newWorkspace();
      // Capture bodies, then make one call whose log has them.
      expect((await operator.call("PATCH", `/workspaces/${ws}`, { logging: { bodies: true, retention_days: 7 } })).status).toBe(200);
      const owner = await member(ws, "owner");
      const key = await owner.call<{ id: string; key: string }>("POST", `/workspaces/${ws}/keys`, { name: "owner's" });
      expect(key.status).toBe(201);
      const openai = new OpenAI({ apiKey: key.body.key, baseURL: gw.baseURL, maxRetries: 0 });
      const answer = await openai.chat.completions.create({ model: "chat-console", messages: [{ role: "user", content: "hello console" }] }).withResponse();
      const requestId = answer.response.headers.get("x-request-id") as string;
      await eventually(async () => (await operator.call(`GET`, `/workspaces/${ws}/logs/${requestId}`)).body.request_body, 30_000);

      const outsider = await member(await newWorkspace(), "owner");
      const table: Record<string, Record<string, boolean | number>> = {};
      const expected: Record<string, Record<string, boolean | number>> = {};
      for (const role of workspaceRoles) {
        const browser = await member(ws, role);
        const own = mayDo(role, "enterprise", "keys.create") ? await browser.call<{ id: string }>("POST", `/workspaces/${ws}/keys`, { name: role }) : undefined;
        const fixtures: Fixtures = { othersKey: key.body.id, ownKey: own?.body.id, requestId };
        table[role] = {};
        expected[role] = {};
        for (const [action, probe] of Object.entries(probes)) {
          const answer = await browser.call(probe.method, probe.path(ws, fixtures), probe.body?.(fixtures));
          const allowed = probe.allowed ? probe.allowed(answer) : answer.status >= 200 && answer.status < 300;
          // Refused is a 403 saying so, never a 404, a 500 or anything else.
          (table[role] as Record<string, boolean | number>)[action] = allowed || answer.status;
          // Without logs.bodies a log still opens (logs.read), its bodies left out.
          const refusedWith = action === "logs.bodies" && mayDo(role, "enterprise", "logs.read") ? 200 : 403;
          (expected[role] as Record<string, boolean | number>)[action] = mayDo(role, "enterprise", action as WorkspaceAction) || refusedWith;
        }
        const outsiderAnswer = await outsider.call(probes["workspace.read"].method, probes["workspace.read"].path(ws, fixtures));
        expect(outsiderAnswer.status).toBe(404);
      }
      expect(table).toEqual(expected);
      // Every probe by someone the matrix refuses is refused for an outsider too, with a 404.
      for (const [action, probe] of Object.entries(probes)) {
        const answer = await outsider.call(
          probe.method,
          probe.path(ws, { othersKey: key.body.id, requestId }),
          probe.body?.({ othersKey: key.body.id, requestId }),
        );
        expect([action, answer.status]).toEqual([action, 404]);
      }
      // Deleting: refused to all but the owner, whose delete revokes every key.
      for (const role of workspaceRoles.filter((r) => r !== "owner")) {
        const browser = await member(ws, role);
        expect((await browser.call("DELETE", `/workspaces/${ws}`)).status).toBe(403);
      }
      expect((await owner.call("DELETE", `/workspaces/${ws}`)).status).toBe(200);
      await expect(openai.chat.completions.create({ model: "chat-console", messages: [{ role: "user", content: "after" }] })).rejects.toMatchObject({
        status: 401,
      });
      expect((await owner.call("GET", `/workspaces/${ws}`)).status).toBe(404);
    });

    it("then a role other than owner is inert while the workspace is off Enterprise, and applies again when it returns", async () => {
      const ws = await newWorkspace();
      const admin = await member(ws, "admin");
      expect((await admin.call("GET", `/workspaces/${ws}/keys`)).status).toBe(200);
      expect((await operator.call("PATCH", `/workspaces/${ws}`, { plan: "pro" })).status).toBe(200);
      const refused = await admin.call("GET", `/workspaces/${ws}/keys`);
      expect(refused.status).toBe(403);
      expect(refused.body.error?.message).toContain("Enterprise");
      const session = await admin.call<{ memberships: { workspace_id: string; effective_role: string | null; actions: string[] }[] }>("GET", "/session");
      expect(session.body.memberships.find((m) => m.workspace_id === ws)).toMatchObject({ effective_role: null, actions: [] });
      // Inviting anyone but an owner is refused on this plan.
      expect((await operator.call("POST", `/workspaces/${ws}/invitations`, { email: email("x"), role: "viewer" })).status).toBe(409);
      expect((await operator.call("PATCH", `/workspaces/${ws}`, { plan: "enterprise" })).status).toBe(200);
      expect((await admin.call("GET", `/workspaces/${ws}/keys`)).status).toBe(200);
    });

    it("then the workspace keeps an owner: the last one can be neither demoted nor removed", async () => {
      const ws = await newWorkspace();
      const owner = await member(ws, "owner");
      const me = owner.session?.user.id as string;
      expect((await owner.call("PATCH", `/workspaces/${ws}/members/${me}`, { role: "viewer" })).status).toBe(409);
      expect((await owner.call("DELETE", `/workspaces/${ws}/members/${me}`)).status).toBe(409);
      const second = await member(ws, "owner");
      expect((await second.call("PATCH", `/workspaces/${ws}/members/${me}`, { role: "viewer" })).status).toBe(200);
      const members = await second.call<{ data: { user_id: string; role: string }[] }>("GET", `/workspaces/${ws}/members`);
      expect(members.body.data.find((m) => m.user_id === me)?.role).toBe("viewer");
      const audit = await second.call<{ data: { action: string; actor: string }[] }>("GET", `/workspaces/${ws}/audit`);
      expect(audit.body.data[0]).toMatchObject({ action: "member.role", actor: second.session?.user.email });
    });

    it("then anyone may leave a workspace, and is a stranger to it afterwards; removing someone else needs team.manage", async () => {
      const ws = await newWorkspace();
      const viewer = await member(ws, "viewer");
      const other = await member(ws, "viewer");
      expect((await viewer.call("DELETE", `/workspaces/${ws}/members/${other.session?.user.id}`)).status).toBe(403);
      expect((await viewer.call("DELETE", `/workspaces/${ws}/members/${viewer.session?.user.id}`)).status).toBe(200);
      expect((await viewer.call("GET", `/workspaces/${ws}`)).status).toBe(404);
      expect((await other.call("GET", `/workspaces/${ws}`)).status).toBe(200);
    });

    it("then signing in starts a new session: a cookie planted before sign-in opens nothing after it", async () => {
      const person = await signInOperator(origin, gw.adminURL, gw.adminToken, email("fixation"), PASSWORD);
      const planted = person.cookie as string;
      const again = new ConsoleBrowser(origin);
      again.cookie = planted;
      const signed = await again.call("POST", "/sign-in", { email: person.session?.user.email, password: PASSWORD });
      expect(signed.status).toBe(200);
      expect(again.cookie).not.toBe(planted);
      const attacker = new ConsoleBrowser(origin);
      attacker.cookie = planted;
      expect((await attacker.call("GET", "/session")).status).toBe(401);
      expect((await again.call("GET", "/session")).status).toBe(200);
      // Signing out everywhere ends every session of the person.
      const other = new ConsoleBrowser(origin);
      await other.call("POST", "/sign-in", { email: person.session?.user.email, password: PASSWORD });
      expect((await again.call("POST", "/sign-out/everywhere")).status).toBe(204);
      expect((await other.call("GET", "/session")).status).toBe(401);
    });

    it("then a change without the session's CSRF token, or from another site, is refused and changes nothing", async () => {
      const ws = await newWorkspace();
      const noToken = await operator.call("PATCH", `/workspaces/${ws}`, { name: "csrf" }, { "x-csrf-token": "" });
      expect([noToken.status, noToken.body.error?.code]).toEqual([403, "csrf_failed"]);
      const crossSite = await operator.call("PATCH", `/workspaces/${ws}`, { name: "csrf" }, { origin: "https://evil.example" });
      expect([crossSite.status, crossSite.body.error?.code]).toEqual([403, "csrf_failed"]);
      const crossSiteSignIn = await new ConsoleBrowser(origin).call(
        "POST",
        "/sign-in",
        { email: "x@example.com", password: "x" },
        { origin: "https://evil.example" },
      );
      expect(crossSiteSignIn.status).toBe(403);
      expect((await operator.call<{ name: string }>("GET", `/workspaces/${ws}`)).body.name).toBe("console enterprise");
    });

    it("then an invitation goes by email too when SMTP is set, with the link the console shows", async () => {
      const ws = await newWorkspace();
      const to = email("mailed");
      const invited = await operator.call<{ link: string; emailed: boolean }>("POST", `/workspaces/${ws}/invitations`, { email: to, role: "developer" });
      expect(invited.body.emailed).toBe(true);
      const mailed = await eventually(() => mail.messages.find((m) => m.to.includes(to)));
      expect(mailed.from).toBe("gateway@example.com");
      expect(mailed.auth?.username).toBe("gateway");
      expect(mailed.subject).toContain("console enterprise");
      expect(mailed.text).toContain(invited.body.link);
      expect(mailed.text).toContain("as developer");
      const joined = await new ConsoleBrowser(origin).acceptLink(invited.body.link, PASSWORD);
      expect(joined.body.memberships?.map((m) => [m.workspace_id, m.role])).toEqual([[ws, "developer"]]);
    });

    it("then an invitation link works once", async () => {
      const ws = await newWorkspace();
      const invited = await operator.call<{ link: string }>("POST", `/workspaces/${ws}/invitations`, { email: email("twice"), role: "viewer" });
      expect((await new ConsoleBrowser(origin).acceptLink(invited.body.link, PASSWORD)).status).toBe(200);
      const second = await new ConsoleBrowser(origin).acceptLink(invited.body.link, PASSWORD);
      expect([second.status, second.body.error?.param]).toEqual([400, "token"]);
    });

    describe("single sign-on (OpenID Connect, against a local provider)", () => {
      const sso = (login: string, returnTo = "/console/w/overview") =>
        walkOidcSignIn(`${origin}/console/api/oidc/start?return_to=${encodeURIComponent(returnTo)}`, login, idp.issuer);
      const cookieFrom = (cookies: string[]) =>
        cookies.map((c) => c.split(";")[0] as string).find((c) => c.startsWith("gw_console=") && c.length > "gw_console=".length);

      it("then a person who signed in with a password signs in by SSO with the same verified address, and lands where they were going", async () => {
        const ws = await newWorkspace("pro");
        const owner = await member(ws, "owner");
        const address = owner.session?.user.email as string;
        idpAccounts.alice = { email: address.toUpperCase() };
        const config = await owner.call<{ oidc: { enabled: boolean } }>("GET", "/config");
        expect(config.body.oidc.enabled).toBe(true);
        const walk = await sso("alice", `/console/w/${ws}/keys`);
        expect([walk.status, walk.location]).toEqual([302, `${origin}/console/w/${ws}/keys`]);
        const browser = new ConsoleBrowser(origin);
        browser.cookie = cookieFrom(walk.gatewayCookies);
        const session = await browser.call<{ user: { email: string }; memberships: { workspace_id: string }[] }>("GET", "/session");
        expect(session.status).toBe(200);
        expect(session.body.user.email).toBe(address);
        expect(session.body.memberships.map((m) => m.workspace_id)).toContain(ws);
      });

      it("then an identity the gateway does not know, or whose address is unverified, is turned away with a reason and no session", async () => {
        idpAccounts.stranger = { email: email("stranger") };
        const ws = await newWorkspace("pro");
        const owner = await member(ws, "owner");
        idpAccounts.unverified = { email: owner.session?.user.email as string, email_verified: false };
        for (const login of ["stranger", "unverified"]) {
          const walk = await sso(login);
          expect(walk.status).toBe(302);
          expect(walk.location).toMatch(/\/console\/sign-in\?error=No%20console%20account/);
          expect(cookieFrom(walk.gatewayCookies)).toBeUndefined();
        }
      });

      it.each([["https://evil.example/"], ["//evil.example/console/"], ["/\\evil.example"], ["/console/../../evil"], ["javascript:alert(1)"]])(
        "then a return address of %s is not followed: the person lands in the console",
        async (returnTo) => {
          const ws = await newWorkspace("pro");
          const owner = await member(ws, "owner");
          idpAccounts.bob = { email: owner.session?.user.email as string };
          const walk = await sso("bob", returnTo);
          expect(walk.status).toBe(302);
          expect(new URL(walk.location as string).origin).toBe(origin);
          expect(new URL(walk.location as string).pathname.startsWith("/console/")).toBe(true);
        },
      );

      it("then a callback that did not start in this browser, or comes back twice, signs no one in", async () => {
        const forged = await new ConsoleBrowser(origin).call("GET", "/oidc/callback?code=abc&state=def");
        expect(forged.status).toBe(302);
        expect(forged.headers.get("location")).toMatch(/error=/);
        expect(forged.headers.getSetCookie().some((c) => /^gw_console=[^;]+/.test(c))).toBe(false);
      });
    });

    it("then password guessing is throttled per account, whatever the password, and a wrong password says no more than an unknown account", async () => {
      const person = await signInOperator(origin, gw.adminURL, gw.adminToken, email("guess"), PASSWORD);
      const target = person.session?.user.email as string;
      const browser = new ConsoleBrowser(origin);
      const wrong = await browser.call("POST", "/sign-in", { email: target, password: "wrong password 0" });
      const unknown = await browser.call("POST", "/sign-in", { email: email("nobody"), password: "wrong password 0" });
      expect(wrong.status).toBe(401);
      expect(unknown.body).toEqual(wrong.body);
      for (let i = 1; i < 5; i++) expect((await browser.call("POST", "/sign-in", { email: target, password: `wrong password ${i}` })).status).toBe(401);
      const refused = await browser.call("POST", "/sign-in", { email: target, password: PASSWORD });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    });
  });
}
