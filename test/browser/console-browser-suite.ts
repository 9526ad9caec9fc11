import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mayDo, type WorkspaceAction, type WorkspaceRole, workspaceActions, workspaceRoles } from "@gw/contracts";
import { startOpenAIUpstream, type TestOidcAccount, type TestOidcProvider } from "@gw/testkit";
import { ConsoleBrowser, signInOperator, startConsoleGateway } from "../e2e/console-client";
import { eventually } from "../e2e/harness";
import { type GatewayTarget, type TargetName, testPlans } from "../e2e/targets";
import {
  describeViolations,
  desktop,
  type Expected,
  describePages,
  heading,
  launchBrowser,
  PageWatch,
  phone,
  readWorkspacePages,
  seriousViolations,
  settled,
  sidewaysOverflow,
  signedInContext,
} from "./browser-kit";

/**
 * The console's web app in a real browser (Chromium, driven by Playwright), in the mesh and the
 * embedded default: every role's view of an Enterprise workspace against the permission matrix,
 * an outsider's, the whole path from a new operator to an owner whose key is refused by the budget
 * they set, and each page's accessibility (axe-core), fit at 1280 and 390 px, and console.
 * Screenshots and load times go to test/browser/artifacts/<target>/ (not asserted).
 */
const UPSTREAM_KEY = "sk-upstream-console-browser";
const PASSWORD = "correct horse battery staple";
const MODEL = "chat-console";
const ARTIFACTS = fileURLToPath(new URL("./artifacts/", import.meta.url));

let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let browser: Browser;

// $0.001 a token, in and out: a call of a dozen words costs more than a cent.
const config = () => `
providers:
  primary: { kind: openai, base_url: "${upstream.url}", api_key_env: E2E_UPSTREAM_KEY, timeout_ms: 10000 }
models:
  ${MODEL}:
    type: chat
    routes: [{ provider: primary, model: gpt-4o-mini }]
    price: { input_per_mtok: 1000, output_per_mtok: 1000 }
${testPlans}`;

let unique = 0;
const email = (who: string) => `${who}-${Date.now().toString(36)}-${unique++}@example.com`;

/** Who looks: a member with a role, or the platform operator (every action in every workspace). */
type Who = WorkspaceRole | "operator";
const people: readonly Who[] = ["operator", ...workspaceRoles];
const actionsOf = (who: Who): WorkspaceAction[] => (who === "operator" ? [...workspaceActions] : workspaceActions.filter((a) => mayDo(who, "enterprise", a)));

const pages = readWorkspacePages();
/** Each page's h1 (the navigation's label is not always its heading). */
const headings: Record<string, string> = {
  "": "Overview",
  keys: "API keys",
  models: "Models",
  logs: "Logs",
  usage: "Usage & billing",
  team: "Team",
  settings: "Settings",
  audit: "Audit log",
};
const REFUSED = "Not available to your role";
/** The roles that create a key in the fixture, each named "<role>'s key". */
const keyMakers = workspaceRoles.filter((role) => mayDo(role, "enterprise", "keys.create"));

/** A row's link in Logs: its accessible name ends with the request's id. */
const requestLink = (id: string) => new RegExp(`request ${id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);

const signedOut: Expected[] = [{ status: 401, path: "/console/api/session" }];

/**
 * The suite for one target; each target has a test file of its own (console.<target>.browser.test.ts),
 * so that the two run side by side in the suite's workers rather than one after the other.
 */
export function consoleBrowserSuite(name: TargetName): void {
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await upstream?.close();
  });

  describe("the page list the tests walk", () => {
    it("is the web app's, and every page has a known heading", () => {
      expect(pages.length).toBeGreaterThanOrEqual(8);
      for (const page of pages) {
        expect(headings[page.path], `heading of ${page.label}`).toBeDefined();
        for (const action of page.anyOf) expect(workspaceActions).toContain(action);
      }
    });
  });

  const slug = name.replace(/^the /, "").replaceAll(" ", "-");
  const dir = join(ARTIFACTS, slug);

  describe(`the console in a browser, in ${name}`, { timeout: 120_000 }, () => {
    let gw: GatewayTarget;
    let origin: string;
    let idp: TestOidcProvider;
    const idpAccounts: Record<string, TestOidcAccount> = {};
    let operator: ConsoleBrowser;
    /** The Enterprise workspace every role looks at, and one request of it whose bodies were captured. */
    let ws: string;
    let requestId: string;
    const member = new Map<Who, ConsoleBrowser>();
    let outsider: ConsoleBrowser;
    let startedAt = Date.now();
    const loadTimes = new Map<string, { page: string; who: string; full_load_ms?: number; in_app_ms?: number }>();
    let flowLatency: { overview_ms: number; logs_ms: number } | undefined;
    const timing = (page: string, who: string) => loadTimes.get(`${page}|${who}`) ?? loadTimes.set(`${page}|${who}`, { page, who }).get(`${page}|${who}`)!;

    const url = (path: string) => `${origin}/console${path}`;
    const wsUrl = (path: string) => url(`/w/${ws}/${path}`);

    beforeAll(async () => {
      startedAt = Date.now();
      mkdirSync(join(dir, "1280"), { recursive: true });
      mkdirSync(join(dir, "390"), { recursive: true });
      ({ gw, origin, idp } = await startConsoleGateway(name, config(), { E2E_UPSTREAM_KEY: UPSTREAM_KEY, LOG_LEVEL: "warn" }, idpAccounts));
      operator = await signInOperator(origin, gw.adminURL, gw.adminToken, email("operator"), PASSWORD);
      member.set("operator", operator);
      const created = await operator.call<{ id: string }>("POST", "/workspaces", { name: "Acme Enterprise", plan: "enterprise" });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      ws = created.body.id;
      const logging = await operator.call("PATCH", `/workspaces/${ws}`, { logging: { bodies: true, retention_days: 7 } });
      expect(logging.status).toBe(200);
      for (const role of workspaceRoles) {
        const invited = await operator.call<{ link: string }>("POST", `/workspaces/${ws}/invitations`, { email: email(role), role });
        expect(invited.status, JSON.stringify(invited.body)).toBe(201);
        const person = new ConsoleBrowser(origin);
        expect((await person.acceptLink(invited.body.link, PASSWORD)).status).toBe(200);
        member.set(role, person);
      }
      let ownersKey = "";
      for (const role of keyMakers) {
        const key = await (member.get(role) as ConsoleBrowser).call<{ key: string }>("POST", `/workspaces/${ws}/keys`, { name: `${role}'s key` });
        expect(key.status).toBe(201);
        if (role === "owner") ownersKey = key.body.key;
      }
      const openai = new OpenAI({ apiKey: ownersKey, baseURL: gw.baseURL, maxRetries: 0 });
      const answer = await openai.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hello browser" }] }).withResponse();
      requestId = answer.response.headers.get("x-request-id") as string;
      await eventually(async () => (await operator.call(`GET`, `/workspaces/${ws}/logs/${requestId}`)).body.request_body, 30_000);

      const elsewhere = await operator.call<{ id: string }>("POST", "/workspaces", { name: "Elsewhere", plan: "pro" });
      const invited = await operator.call<{ link: string }>("POST", `/workspaces/${elsewhere.body.id}/invitations`, {
        email: email("outsider"),
        role: "owner",
      });
      outsider = new ConsoleBrowser(origin);
      expect((await outsider.acceptLink(invited.body.link, PASSWORD)).status).toBe(200);
    }, 180_000);

    afterAll(async () => {
      const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
      const table = [...loadTimes.values()];
      if (table.length > 0) {
        writeFileSync(
          join(dir, "load-times.json"),
          `${JSON.stringify(
            {
              target: name,
              measured:
                "milliseconds from navigation start to the page's h1 visible: full_load_ms a fresh load of the URL, in_app_ms a click in the navigation",
              target_seconds: Number(seconds),
              pages: table,
              flow_request_seen_after_ms: flowLatency ?? null,
            },
            null,
            2,
          )}\n`,
        );
      }
      console.info(
        `[console browser] ${name}: ${seconds} s; the flow's request seen after ${JSON.stringify(flowLatency)}\n${table.map((t) => `  ${t.page} (${t.who}): full ${t.full_load_ms ?? "—"} ms, in app ${t.in_app_ms ?? "—"} ms`).join("\n")}`,
      );
      await gw?.stop();
      await idp?.close();
    });

    /** A page opened by URL that the role may not open: a refusal, and no call for the page's data. */
    async function expectRefused(page: Page, watch: PageWatch, path: string, what: string) {
      watch.apiCalls = [];
      await page.goto(url(path));
      await heading(page, REFUSED).waitFor();
      await settled(page);
      expect(await page.getByText("does not include this page").count(), what).toBe(1);
      expect(await page.locator("main table").count(), what).toBe(0);
      const shell = ["GET /console/api/session", "GET /console/api/config", `GET /console/api/workspaces/${ws}`, "GET /console/api/workspaces"];
      expect(
        watch.apiCalls.filter((c) => !shell.includes(c)),
        `${what}: API calls`,
      ).toEqual([]);
      expect(watch.take(), what).toEqual([]);
    }

    /** What each page shows the role, per the matrix. `can` is the role's; `who` the role. */
    const pageChecks: Record<string, (page: Page, can: (a: WorkspaceAction) => boolean, who: Who, watch: PageWatch) => Promise<void>> = {
      "": async (page) => {
        const requests = page.locator(".stat").filter({ has: page.locator("dt", { hasText: /^Requests$/ }) });
        expect(Number(await requests.locator("dd").first().textContent())).toBeGreaterThanOrEqual(1);
      },
      keys: async (page, can, who) => {
        expect(await page.getByRole("button", { name: "Create key", exact: true }).count(), "Create key").toBe(can("keys.create") ? 1 : 0);
        for (const maker of keyMakers) {
          const keyName = `${maker}'s key`;
          await page.getByRole("rowheader").filter({ hasText: keyName }).waitFor();
          const manages = can("keys.manage") || (can("keys.manage_own") && maker === who);
          for (const verb of ["Edit", "Disable", "Revoke"]) {
            expect(await page.getByRole("button", { name: `${verb} key ${keyName}`, exact: true }).count(), `${verb} ${keyName}`).toBe(manages ? 1 : 0);
          }
        }
        const ownOnly = !can("keys.manage") && can("keys.manage_own");
        expect(await page.getByText("Your role may manage the keys you created").count()).toBe(ownOnly ? 1 : 0);
      },
      models: async (page) => {
        await page.getByRole("rowheader", { name: MODEL, exact: true }).waitFor();
      },
      logs: async (page, can, _who, watch) => {
        await page.getByRole("form", { name: "Filter requests" }).waitFor();
        await page.getByRole("link", { name: requestLink(requestId) }).click();
        await heading(page, `Request ${requestId}`).waitFor();
        await settled(page);
        for (const body of ["Request body", "Response body"]) {
          expect(await page.getByRole("heading", { level: 2, name: body, exact: true }).count(), body).toBe(can("logs.bodies") ? 1 : 0);
        }
        if (can("logs.bodies")) expect((await page.locator("pre.code").first().textContent()) ?? "").toContain("hello browser");
        else expect(await page.getByText("Your role sees request metadata only, not bodies.").count()).toBe(1);
        expect((await page.getByText("hello browser").count()) > 0, "the body's text shown iff logs.bodies").toBe(can("logs.bodies"));
        expect(watch.take(), "the log's detail").toEqual([]);
        await page.getByRole("link", { name: "← All requests" }).click();
        await heading(page, "Logs").waitFor();
      },
      usage: async (page, can) => {
        for (const [section, action] of [
          ["Budget this month", "budgets.read"],
          ["Usage", "usage.read"],
          ["Monthly statement", "statements.read"],
        ] as const) {
          expect(await page.getByRole("region", { name: section, exact: true }).count(), section).toBe(can(action) ? 1 : 0);
        }
      },
      team: async (page, can) => {
        const members = page.getByRole("region", { name: "Members", exact: true });
        for (const role of workspaceRoles) {
          const address = member.get(role)?.session?.user.email as string;
          await members.getByRole("rowheader").filter({ hasText: address }).waitFor();
        }
        expect(await page.getByRole("region", { name: "Invite someone", exact: true }).count(), "the invite form").toBe(can("team.manage") ? 1 : 0);
        expect(await page.getByRole("button", { name: "Create invitation" }).count()).toBe(can("team.manage") ? 1 : 0);
        expect(await members.getByRole("combobox", { name: /^Role of / }).count(), "role pickers").toBe(can("team.manage") ? workspaceRoles.length : 0);
      },
      settings: async (page, can) => {
        for (const [section, action] of [
          ["General", "workspace.settings"],
          ["Limits", "limits.manage"],
          ["Budget and alerts", "budgets.manage"],
          ["Detailed logs", "logging.manage"],
          ["Provider credentials", "credentials.manage"],
        ] as const) {
          expect(await page.getByRole("region", { name: section, exact: true }).count(), section).toBe(can(action) ? 1 : 0);
        }
        if (can("logging.manage")) expect(await page.getByLabel("Keep request and response bodies").isChecked()).toBe(true);
        expect(await page.getByRole("button", { name: /^Save/ }).count(), "Save buttons").toBeGreaterThan(0);
      },
      audit: async (page) => {
        await page.getByRole("group", { name: "Audit records, newest first" }).waitFor();
      },
    };

    for (const who of people) {
      it(`then the ${who} sees the pages and controls the matrix gives ${who === "operator" ? "an operator" : `the ${who} role`}, and a refusal on the others`, async () => {
        const actions = actionsOf(who);
        const can = (action: WorkspaceAction) => actions.includes(action);
        const allowed = pages.filter((p) => p.anyOf.some(can));
        const refused = pages.filter((p) => !allowed.includes(p));
        expect(allowed.length).toBeGreaterThan(0);
        const context = await signedInContext(browser, origin, member.get(who) as ConsoleBrowser);
        try {
          const page = await context.newPage();
          const watch = new PageWatch(page, origin);
          const [first] = allowed as [(typeof allowed)[number]];
          await page.goto(wsUrl(first.path));
          await heading(page, headings[first.path] as string).waitFor();

          const nav = page.getByRole("navigation", { name: "Console" });
          expect(await nav.getByRole("link").allInnerTexts()).toEqual([...allowed.map((p) => p.label), ...(who === "operator" ? ["All workspaces"] : [])]);

          for (const target of allowed) {
            if (target !== first) {
              const clicked = Date.now();
              await nav.getByRole("link", { name: target.label, exact: true }).click();
              await heading(page, headings[target.path] as string).waitFor();
              timing(target.label, who).in_app_ms = Date.now() - clicked;
            }
            await settled(page);
            expect(await page.getByRole("alert").allInnerTexts(), `errors shown on ${target.label}`).toEqual([]);
            await (pageChecks[target.path] as (typeof pageChecks)[string])(page, can, who, watch);
            expect(watch.take(), `${who} on ${target.label}`).toEqual([]);
          }

          for (const target of refused) await expectRefused(page, watch, `/w/${ws}/${target.path}`, `${who} on ${target.label}`);
          if (!can("logs.read")) await expectRefused(page, watch, `/w/${ws}/logs/${requestId}`, `${who} on a log's detail`);
          if (who === "viewer") await page.screenshot({ path: join(dir, "1280", "refused-viewer-settings.png"), fullPage: true });

          if (who === "operator") {
            await page.goto(wsUrl(""));
            await heading(page, "Overview").waitFor();
            await nav.getByRole("link", { name: "All workspaces", exact: true }).click();
            await heading(page, "All workspaces").waitFor();
            await page.getByRole("link", { name: "Acme Enterprise", exact: true }).waitFor();
            await page.getByRole("link", { name: "Elsewhere", exact: true }).waitFor();
            expect(await page.getByRole("button", { name: "Create workspace" }).count()).toBe(1);
          } else {
            watch.apiCalls = [];
            await page.goto(url("/workspaces"));
            await heading(page, "All workspaces").waitFor();
            expect(await page.getByText("Only platform operators see every workspace.").count()).toBe(1);
            expect(await page.locator("main table").count()).toBe(0);
            expect(watch.apiCalls).not.toContain("GET /console/api/workspaces");
          }
          expect(watch.take(), `${who}: the last pages`).toEqual([]);
        } finally {
          await context.close();
        }
      });
    }

    it("then a member of another workspace who opens this one's address finds no such workspace, and none of its data", async () => {
      const context = await signedInContext(browser, origin, outsider);
      try {
        const page = await context.newPage();
        const watch = new PageWatch(page, origin);
        const notFound: Expected[] = [{ status: 404, path: `/console/api/workspaces/${ws}` }];
        for (const path of ["", "keys", `logs/${requestId}`]) {
          watch.apiCalls = [];
          await page.goto(wsUrl(path));
          await heading(page, "Workspace not found").waitFor();
          await settled(page);
          expect(await page.getByText("Acme Enterprise").count()).toBe(0);
          expect(await page.getByRole("navigation", { name: "Console" }).getByRole("link").count()).toBe(0);
          expect(await page.locator("main table").count()).toBe(0);
          expect(watch.apiCalls.filter((c) => c.startsWith(`GET /console/api/workspaces/${ws}/`))).toEqual([]);
          expect(watch.take(notFound), path).toEqual([]);
        }
      } finally {
        await context.close();
      }
    });

    /**
     * Each page's accessibility, fit and console, one test a page: on a slow machine the whole walk
     * (sixteen pages at two widths) outlasts one test's timeout, and a test per page names the one that fails.
     */
    describe("then every page passes axe-core (no serious or critical violation), fits 1280 and 390 px without scrolling sideways, and logs no error", () => {
      type Viewer = "owner" | "viewer" | "operator" | "outsider" | "signed out";
      const seats = new Map<Viewer, { context: BrowserContext; page: Page; watch: PageWatch }>();
      /** The viewer's page, opened in beforeAll. */
      const seat = (who: Viewer) => seats.get(who) as { page: Page; watch: PageWatch };
      beforeAll(async () => {
        const contexts: [Viewer, BrowserContext][] = [
          ["owner", await signedInContext(browser, origin, member.get("owner") as ConsoleBrowser)],
          ["viewer", await signedInContext(browser, origin, member.get("viewer") as ConsoleBrowser)],
          ["operator", await signedInContext(browser, origin, operator)],
          ["outsider", await signedInContext(browser, origin, outsider)],
          ["signed out", await browser.newContext({ viewport: desktop })],
        ];
        for (const [who, context] of contexts) {
          const page = await context.newPage();
          seats.set(who, { context, page, watch: new PageWatch(page, origin) });
        }
      }, 60_000);
      afterAll(async () => {
        for (const { context } of seats.values()) await context.close();
      });

      const visits: { slug: string; label: string; who: Viewer; url: () => string; heading: string | (() => string); expected?: () => Expected[] }[] = [
        ...pages.map((p) => ({
          slug: p.path || "overview",
          label: p.label,
          who: "owner" as const,
          url: () => wsUrl(p.path),
          heading: headings[p.path] as string,
        })),
        { slug: "log-detail", label: "A log's detail", who: "owner", url: () => wsUrl(`logs/${requestId}`), heading: () => `Request ${requestId}` },
        { slug: "page-not-found", label: "Page not found", who: "owner", url: () => wsUrl("no-such-page"), heading: "Page not found" },
        { slug: "not-available-to-your-role", label: "Not available to your role", who: "viewer", url: () => wsUrl("settings"), heading: REFUSED },
        { slug: "all-workspaces", label: "All workspaces", who: "operator", url: () => url("/workspaces"), heading: "All workspaces" },
        {
          slug: "workspace-not-found",
          label: "Workspace not found",
          who: "outsider",
          url: () => wsUrl(""),
          heading: "Workspace not found",
          expected: () => [{ status: 404, path: `/console/api/workspaces/${ws}` }],
        },
        { slug: "sign-in", label: "Sign in", who: "signed out", url: () => url("/sign-in"), heading: "Sign in", expected: () => signedOut },
        {
          slug: "accept-invitation",
          label: "Accept your invitation",
          who: "signed out",
          url: () => url("/invite#token=not-a-real-token"),
          heading: "Accept your invitation",
          expected: () => signedOut,
        },
        {
          slug: "finish-signing-in",
          label: "Finish signing in",
          who: "signed out",
          url: () => url("/sign-in#token=not-a-real-token"),
          heading: "Finish signing in",
          expected: () => signedOut,
        },
      ];

      for (const o of visits) {
        it(`${o.label} (${o.who})`, async () => {
          const { page, watch } = seat(o.who);
          const findings: string[] = [];
          await page.setViewportSize(desktop);
          const started = Date.now();
          await page.goto(o.url());
          await heading(page, typeof o.heading === "function" ? o.heading() : o.heading).waitFor();
          timing(o.label, o.who).full_load_ms = Date.now() - started;
          await settled(page);
          for (const size of [desktop, phone]) {
            await page.setViewportSize(size);
            const where = `${o.label} (${o.who}) at ${size.width} px`;
            let fit = await sidewaysOverflow(page);
            for (let tries = 0; fit.overflow > 0 && tries < 10; tries++) {
              // A chart sizes itself to its box after a resize (ResizeObserver): give layout a frame.
              await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
              fit = await sidewaysOverflow(page);
            }
            if (fit.overflow > 0) findings.push(`${where}: the page scrolls sideways by ${fit.overflow} px; sticking out: ${fit.culprits.join(", ")}`);
            const violations = await seriousViolations(page);
            if (violations.length > 0) findings.push(`${where}: axe-core\n${describeViolations(violations)}`);
            await page.screenshot({ path: join(dir, String(size.width), `${o.slug}.png`), fullPage: true });
          }
          const problems = watch.take(o.expected?.());
          if (problems.length > 0) findings.push(`${o.label} (${o.who}): console\n${problems.map((p) => `  ${p.kind}: ${p.text} ${p.url}`).join("\n")}`);
          expect(findings).toEqual([]);
        });
      }

      it("and on a phone the navigation opens behind the Menu button and closes when a page is chosen", async () => {
        const { page, watch } = seat("owner");
        await page.setViewportSize(phone);
        await page.goto(wsUrl(""));
        await heading(page, "Overview").waitFor();
        const menu = page.getByRole("button", { name: "Menu" });
        expect(await menu.getAttribute("aria-expanded")).toBe("false");
        await menu.click();
        await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Keys", exact: true }).click();
        await heading(page, "API keys").waitFor();
        expect(await menu.getAttribute("aria-expanded")).toBe("false");
        await settled(page);
        expect(watch.take()).toEqual([]);
      });
    });

    it("then a new operator creates a workspace and invites its owner, who signs in three ways, makes a key, calls the API, and sees the calls and the budget's refusals", async () => {
      const flowDir = join(dir, "flow");
      mkdirSync(flowDir, { recursive: true });
      const shot = (page: Page, step: string) => page.screenshot({ path: join(flowDir, `${step}.png`), fullPage: true });
      const contexts: BrowserContext[] = [];
      try {
        // The operator: made with the admin API, whose single-use link sets a password in the browser.
        const operatorEmail = email("flow-operator");
        const res = await fetch(`${gw.adminURL}/admin/users`, {
          method: "POST",
          headers: { authorization: `Bearer ${gw.adminToken}`, "content-type": "application/json" },
          body: JSON.stringify({ email: operatorEmail, operator: true }),
        });
        expect(res.status).toBe(201);
        const token = new URL(((await res.json()) as { link: string }).link, origin).hash.replace(/^#token=/, "");
        const operatorContext = await browser.newContext({ viewport: desktop });
        contexts.push(operatorContext);
        const op = await operatorContext.newPage();
        const opWatch = new PageWatch(op, origin);
        await op.goto(url(`/sign-in#token=${token}`));
        await heading(op, "Finish signing in").waitFor();
        await op.getByLabel("Your name (optional)").fill("Flow Operator");
        await op.getByLabel("Password").fill(PASSWORD);
        await op.getByRole("button", { name: "Sign in", exact: true }).click();
        await heading(op, "All workspaces").waitFor();
        expect(opWatch.take(signedOut), "the operator's first sign-in").toEqual([]);

        // A workspace, on the Workspaces page.
        await op.getByLabel("Name", { exact: true }).fill("Flow Co");
        await op.getByLabel("Plan", { exact: true }).selectOption("enterprise");
        await op.getByRole("button", { name: "Create workspace" }).click();
        await heading(op, "Settings").waitFor();
        const flowWs = /\/console\/w\/([^/]+)\/settings/.exec(op.url())?.[1] as string;
        expect(flowWs).toBeTruthy();
        expect(await op.getByText("Flow Co").count()).toBeGreaterThan(0);

        // Its owner, invited on the Team page: the link is shown.
        const ownerEmail = email("flow-owner");
        await op.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Team", exact: true }).click();
        await heading(op, "Team").waitFor();
        await op.getByLabel("Email", { exact: true }).fill(ownerEmail);
        await op.getByLabel("Role", { exact: true }).selectOption("owner");
        await op.getByRole("button", { name: "Create invitation" }).click();
        const link = await op.getByLabel("Invitation link").inputValue();
        expect(link).toMatch(/\/console\/invite#token=/);
        await op.getByRole("region", { name: "Pending invitations" }).getByRole("rowheader", { name: ownerEmail }).waitFor();
        await shot(op, "01-invitation-created");
        expect(opWatch.take(), "the operator's pages").toEqual([]);

        // The owner opens it in a fresh browser, chooses a password and is in.
        const ownerContext = await browser.newContext({ viewport: desktop });
        contexts.push(ownerContext);
        const page = await ownerContext.newPage();
        const watch = new PageWatch(page, origin);
        await page.goto(link);
        await heading(page, "Accept your invitation").waitFor();
        await page.getByLabel("Password").fill(PASSWORD);
        await page.getByRole("button", { name: "Join and sign in" }).click();
        await heading(page, "Overview").waitFor();
        expect(page.url()).toContain(`/console/w/${flowWs}/`);
        const signOut = async () => {
          await page.getByRole("button", { name: "Sign out", exact: true }).click();
          await heading(page, "Sign in").waitFor();
        };
        await signOut();

        // The password form.
        await page.getByLabel("Email").fill(ownerEmail);
        await page.getByLabel("Password").fill(PASSWORD);
        await page.getByRole("button", { name: "Sign in", exact: true }).click();
        await heading(page, "Overview").waitFor();
        expect(page.url()).toContain(`/console/w/${flowWs}/`);
        await signOut();

        // Single sign-on, through the test provider's own pages, with the same (verified) address.
        idpAccounts["flow-owner"] = { email: ownerEmail, email_verified: true, name: "Flow Owner" };
        await page.getByRole("link", { name: "Sign in with SSO" }).click();
        await page.getByPlaceholder("Enter any login").fill("flow-owner");
        await page.getByPlaceholder("and password").fill("anything at all");
        await page.getByRole("button", { name: "Sign-in" }).click();
        await page.getByRole("button", { name: "Continue" }).click();
        await heading(page, "Overview").waitFor();
        expect(new URL(page.url()).origin).toBe(origin);
        expect(page.url()).toContain(`/console/w/${flowWs}/`);
        await page.getByText(ownerEmail).first().waitFor();
        expect(watch.take(signedOut), "signing in three ways").toEqual([]);

        // A key, its secret shown once in a dialog.
        const nav = page.getByRole("navigation", { name: "Console" });
        await nav.getByRole("link", { name: "Keys", exact: true }).click();
        await heading(page, "API keys").waitFor();
        await page.getByRole("button", { name: "Create key", exact: true }).click();
        const create = page.getByRole("dialog", { name: "Create a key" });
        await create.getByLabel("Name").waitFor();
        const dialogViolations = await seriousViolations(page);
        expect(dialogViolations, describeViolations(dialogViolations)).toEqual([]);
        await create.getByLabel("Name").fill("flow key");
        await create.getByRole("button", { name: "Create key", exact: true }).click();
        const secretDialog = page.getByRole("dialog", { name: "Your new key" });
        const secret = await secretDialog.getByLabel("Secret of flow key").inputValue();
        expect(secret.length).toBeGreaterThan(20);
        const secretViolations = await seriousViolations(page);
        expect(secretViolations, describeViolations(secretViolations)).toEqual([]);
        await shot(page, "02-secret-shown-once");
        await secretDialog.getByRole("button", { name: "I have copied it" }).click();
        await page.getByRole("rowheader").filter({ hasText: "flow key" }).waitFor();
        expect(await page.getByText(secret).count(), "the secret is not on the page any more").toBe(0);

        // Overview in this tab, Logs in a second one, so that each is watched from the call on.
        const logsTab = await ownerContext.newPage();
        const logsWatch = new PageWatch(logsTab, origin);
        await logsTab.goto(url(`/w/${flowWs}/logs`));
        await heading(logsTab, "Logs").waitFor();
        await nav.getByRole("link", { name: "Overview", exact: true }).click();
        await heading(page, "Overview").waitFor();
        await page.getByText("No requests in this period").waitFor();

        // The official client calls a model with it. Twelve words in, at $0.001 a token: this one
        // call alone costs more than the cent the budget below will allow.
        const openai = new OpenAI({ apiKey: secret, baseURL: gw.baseURL, maxRetries: 0 });
        const prompt = "hello from the flow, a call that costs more than one whole cent";
        const completion = await openai.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: prompt }] }).withResponse();
        const flowRequest = completion.response.headers.get("x-request-id") as string;
        expect(completion.data.choices[0]?.message.content).toBeTruthy();
        const answered = Date.now();
        const deadline = answered + 5_000;

        // In Overview (the request count) and in Logs within 5 s: each tab reloads until then.
        const stat = (term: string) =>
          page
            .locator(".stat")
            .filter({ has: page.locator("dt", { hasText: new RegExp(`^${term}$`) }) })
            .locator("dd")
            .first();
        // When the attempt that saw the request began: a reload on a loaded machine can take a
        // second, and that is the browser's time, not how late the ledger had the request. The poll
        // makes one more attempt after its timeout; the checks below refuse one begun past the deadline.
        let overviewTried = 0;
        let logsTried = 0;
        const requestCount = async () => {
          overviewTried = Date.now();
          await page.reload();
          await heading(page, "Overview").waitFor();
          await settled(page);
          if ((await page.getByText("No requests in this period").count()) > 0) return 0;
          return Number(await stat("Requests").textContent());
        };
        const logged = logsTab.getByRole("link", { name: requestLink(flowRequest) });
        const inLogs = async () => {
          logsTried = Date.now();
          await logsTab.reload();
          await heading(logsTab, "Logs").waitFor();
          await settled(logsTab);
          return logged.count();
        };
        const [seenInOverview, seenInLogs] = await Promise.all([
          expect
            .poll(requestCount, { timeout: deadline - Date.now(), interval: 100 })
            .toBe(1)
            .then(() => overviewTried),
          expect
            .poll(inLogs, { timeout: deadline - Date.now(), interval: 100 })
            .toBe(1)
            .then(() => logsTried),
        ]);
        expect(seenInOverview).toBeLessThanOrEqual(deadline);
        expect(seenInLogs).toBeLessThanOrEqual(deadline);
        flowLatency = { overview_ms: seenInOverview - answered, logs_ms: seenInLogs - answered };
        expect(Number((await stat("Cost").textContent())?.replace(/[^0-9.]/g, "")), "one call's cost").toBeGreaterThan(0.01);
        await shot(logsTab, "03-request-in-logs");
        expect(logsWatch.take(), "the Logs tab").toEqual([]);
        await logsTab.close();

        // A monthly budget below what one call costs: the next calls are refused with 429.
        await nav.getByRole("link", { name: "Settings", exact: true }).click();
        await heading(page, "Settings").waitFor();
        const budget = page.getByRole("region", { name: "Budget and alerts", exact: true });
        await budget.getByLabel("Set a monthly spend ceiling").check();
        await budget.getByLabel("Budget (USD per month)").fill("0.01");
        expect(await budget.getByLabel("Refuse requests (hard)").isChecked()).toBe(true);
        await budget.getByRole("button", { name: "Save budget" }).click();
        await budget.getByRole("status").filter({ hasText: "Saved" }).waitFor();
        await budget.getByText("Now: $0.01/month · hard").waitFor();
        await shot(page, "04-budget-set");

        const call = () => openai.chat.completions.create({ model: MODEL, max_tokens: 16, messages: [{ role: "user", content: "over budget now" }] });
        const refusals: string[] = [];
        const refusal = await eventually(async () => {
          try {
            await call();
            return undefined;
          } catch (err) {
            return err as { status?: number; code?: string; type?: string; requestID?: string | null };
          }
        }, 15_000);
        expect([refusal.status, refusal.code]).toEqual([429, "insufficient_quota"]);
        refusals.push(refusal.requestID ?? "");
        const second = await call().then(
          () => undefined,
          (err: { status?: number; code?: string; requestID?: string | null }) => err,
        );
        expect([second?.status, second?.code]).toEqual([429, "insufficient_quota"]);
        refusals.push(second?.requestID ?? "");

        // The 429s in Logs, filtered by status.
        await nav.getByRole("link", { name: "Logs", exact: true }).click();
        await heading(page, "Logs").waitFor();
        await page.getByLabel("Status").selectOption("429");
        await page.getByRole("button", { name: "Apply filters" }).click();
        await page.waitForURL(/[?&]status=429/);
        const rows = page.getByRole("group", { name: "Requests, newest first" }).locator("tbody tr");
        const refusedRows = async () => {
          await page.reload();
          await heading(page, "Logs").waitFor();
          await settled(page);
          return rows.count();
        };
        await expect.poll(refusedRows, { timeout: 15_000, interval: 100 }).toBeGreaterThanOrEqual(2);
        for (const id of refusals.filter(Boolean)) await page.getByRole("link", { name: requestLink(id) }).waitFor();
        const statuses = await rows.locator(".badge").allInnerTexts();
        expect(new Set(statuses)).toEqual(new Set(["429"]));
        expect(await rows.filter({ hasText: "insufficient_quota" }).count()).toBe(await rows.count());
        await shot(page, "05-refusals-in-logs");

        // Usage & billing shows the budget spent.
        await nav.getByRole("link", { name: "Usage & billing", exact: true }).click();
        await heading(page, "Usage & billing").waitFor();
        const used = page.getByRole("progressbar", { name: "Workspace budget used" });
        const percentUsed = async () => {
          await page.reload();
          await heading(page, "Usage & billing").waitFor();
          await settled(page);
          return Number(await used.getAttribute("aria-valuenow"));
        };
        await expect.poll(percentUsed, { timeout: 15_000, interval: 100 }).toBe(100);
        await shot(page, "06-budget-spent");
        expect(watch.take(), "the owner's pages").toEqual([]);
      } catch (err) {
        console.error(`[console browser] the flow failed; its pages:\n${await describePages(contexts)}`);
        throw err;
      } finally {
        for (const context of contexts) await context.close();
      }
    });
  });
}
