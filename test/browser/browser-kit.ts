import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { AxeResults, ImpactValue } from "axe-core";
import { type Browser, type BrowserContext, chromium, type Locator, type Page, type Request } from "playwright-core";
import type { WorkspaceAction } from "@gw/contracts";
import type { ConsoleBrowser } from "../e2e/console-client";

/**
 * What the console's browser tests share: the browser, a signed-in context made from an API
 * session's cookie, a watch on each page's console errors (a CSP violation among them), uncaught
 * exceptions and API calls, axe-core's verdict, and the console's page list (read from the web app).
 */

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

export const desktop = { width: 1280, height: 900 };
export const phone = { width: 390, height: 844 };

/** A fresh context (its own cookies and storage) that starts signed in as `person` (a session made through the API). */
export async function signedInContext(browser: Browser, origin: string, person: ConsoleBrowser): Promise<BrowserContext> {
  const value = person.cookie?.replace(/^gw_console=/, "");
  if (!value) throw new Error("the person has no console session cookie");
  const context = await browser.newContext({ viewport: desktop });
  await context.addCookies([{ name: "gw_console", value, domain: new URL(origin).hostname, path: "/console", httpOnly: true, secure: false, sameSite: "Lax" }]);
  return context;
}

export interface Problem {
  kind: "console" | "pageerror";
  text: string;
  /** The resource or script the message names. */
  url: string;
  /** The page it happened on. */
  page: string;
}

/** An API answer the browser logs as a failed resource and the page expects (a 401 when signed out, a 404 for an outsider). */
export interface Expected {
  status: number;
  path: string;
}

/**
 * Watches one page of the console (the gateway's origin only: the identity provider's own pages are
 * not the console's): console errors, uncaught exceptions, and the console API calls it makes.
 */
export class PageWatch {
  private problems: Problem[] = [];
  apiCalls: string[] = [];
  /** Requests of our origin sent and not yet answered, with when each was sent. */
  private pending = new Map<Request, number>();
  private failed: string[] = [];

  constructor(
    readonly page: Page,
    readonly origin: string,
  ) {
    const ours = () => page.url().startsWith(`${origin}/`);
    page.on("console", (message) => {
      if (message.type() !== "error" || !ours()) return;
      this.problems.push({ kind: "console", text: message.text(), url: message.location().url, page: page.url() });
    });
    page.on("pageerror", (error) => {
      if (!ours()) return;
      this.problems.push({ kind: "pageerror", text: error.stack ?? error.message, url: "", page: page.url() });
    });
    page.on("request", (request) => {
      const url = new URL(request.url());
      if (url.origin === origin && url.pathname.startsWith("/console/api/")) this.apiCalls.push(`${request.method()} ${url.pathname}`);
      if (url.origin === origin) this.pending.set(request, Date.now());
    });
    page.on("requestfinished", (request) => this.pending.delete(request));
    // A navigation aborts what the page it leaves was loading: kept for the description, not a problem.
    page.on("requestfailed", (request) => {
      if (this.pending.delete(request)) this.failed.push(`${request.method()} ${new URL(request.url()).pathname}: ${request.failure()?.errorText}`);
    });
    watches.set(page, this);
  }

  /** What a failed step needs to be understood: where the page is, what it shows, what it still waits for. */
  async describe(): Promise<string> {
    const text = await this.page
      .locator("body")
      .textContent({ timeout: 2_000 })
      .catch((err: Error) => `(no text: ${err.message})`);
    const now = Date.now();
    const waiting = [...this.pending].map(([r, sent]) => `${r.method()} ${new URL(r.url()).pathname} for ${now - sent} ms`);
    return [
      `page ${this.page.url()}`,
      `  shows: ${(text ?? "").replace(/\s+/g, " ").slice(0, 600)}`,
      `  waiting for: ${waiting.join(", ") || "nothing"}`,
      `  problems: ${this.problems.map((p) => `${p.kind} ${p.text} (${p.url})`).join("; ") || "none"}`,
      `  failed requests: ${this.failed.slice(-12).join(", ") || "none"}`,
      `  api calls: ${this.apiCalls.slice(-12).join(", ")}`,
    ].join("\n");
  }

  /** The problems since the last call, less the failed resources `expected` names. */
  take(expected: Expected[] = []): Problem[] {
    const taken = this.problems.filter((p) => !isExpected(p, expected));
    this.problems = [];
    return taken;
  }
}

const watches = new WeakMap<Page, PageWatch>();

/** Every watched page of these contexts, described (for the error of a step that failed). */
export async function describePages(contexts: BrowserContext[]): Promise<string> {
  const parts: string[] = [];
  for (const context of contexts) for (const page of context.pages()) parts.push(await (watches.get(page)?.describe() ?? `page ${page.url()} (not watched)`));
  return parts.join("\n");
}

function isExpected(problem: Problem, expected: Expected[]): boolean {
  const status = /^Failed to load resource: the server responded with a status of (\d{3})/.exec(problem.text)?.[1];
  if (problem.kind !== "console" || !status) return false;
  let path: string;
  try {
    path = new URL(problem.url).pathname;
  } catch {
    return false;
  }
  return expected.some((e) => e.status === Number(status) && e.path === path);
}

/** The page's level-1 heading with this exact name. */
export const heading = (page: Page, name: string | RegExp): Locator =>
  page.getByRole("heading", { level: 1, name, ...(typeof name === "string" ? { exact: true } : {}) });

/** Waits until no part of the page is still loading (the console's spinners are `.loading`). */
export async function settled(page: Page, timeout = 15_000): Promise<void> {
  const deadline = Date.now() + timeout;
  for (;;) {
    if ((await page.locator(".loading").count()) === 0) return;
    if (Date.now() > deadline) throw new Error(`still loading after ${timeout} ms: ${await page.locator(".loading").allInnerTexts()}`);
    await page
      .locator(".loading")
      .first()
      .waitFor({ state: "detached", timeout: Math.max(1, deadline - Date.now()) })
      .catch(() => undefined);
  }
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export interface Violation {
  id: string;
  impact: ImpactValue | undefined;
  help: string;
  nodes: { target: string; html: string; summary: string }[];
}

/**
 * axe-core's serious and critical violations on the page as it is. axe is injected by evaluation
 * (CDP, which the page's CSP does not govern), never as a <script>, so the CSP stays as served.
 */
export async function seriousViolations(page: Page): Promise<Violation[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axeSource);
  const results = await page.evaluate(() => (window as unknown as { axe: { run(context: Document): Promise<AxeResults> } }).axe.run(document));
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => ({
      id: v.id,
      impact: v.impact ?? undefined,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target.join(" "), html: n.html.slice(0, 200), summary: n.failureSummary ?? "" })),
    }));
}

export function describeViolations(violations: Violation[]): string {
  return violations
    .map(
      (v) => `${v.impact} ${v.id}: ${v.help}\n${v.nodes.map((n) => `    ${n.target}  ${n.html}\n      ${n.summary.replaceAll("\n", "\n      ")}`).join("\n")}`,
    )
    .join("\n");
}

/** How far the page itself scrolls sideways (0 when it fits), and the elements that stick out (tables scroll in their own box). */
export async function sidewaysOverflow(page: Page): Promise<{ overflow: number; culprits: string[] }> {
  return page.evaluate(() => {
    const overflow = document.documentElement.scrollWidth - window.innerWidth;
    const culprits: string[] = [];
    if (overflow > 0) {
      for (const el of Array.from(document.body.querySelectorAll<HTMLElement>("*"))) {
        const box = el.getBoundingClientRect();
        if (box.right > window.innerWidth + 1 && !el.closest(".table-wrap, .code") && box.width > 0) {
          culprits.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}.${[...el.classList].join(".")} right=${Math.round(box.right)}`);
          if (culprits.length >= 8) break;
        }
      }
    }
    return { overflow, culprits };
  });
}

/** The console's workspace pages and the actions that open each, as the web app lists them (workspace.tsx → workspacePages). */
export interface WorkspacePage {
  path: string;
  label: string;
  anyOf: WorkspaceAction[];
}

/**
 * Read from the app's source rather than imported: the module is TSX with the app's imports, and
 * the test must see the very list the navigation is built from.
 */
export function readWorkspacePages(): WorkspacePage[] {
  const source = readFileSync(new URL("../../services/console/web/src/workspace.tsx", import.meta.url), "utf8");
  const block = /export const workspacePages[^=]*=\s*\[([\s\S]*?)\n\];/.exec(source)?.[1];
  if (!block) throw new Error("workspacePages not found in services/console/web/src/workspace.tsx");
  const pages = [...block.matchAll(/\{\s*path:\s*"([^"]*)",\s*label:\s*"([^"]*)",\s*anyOf:\s*\[([^\]]*)\]\s*\}/g)].map(([, path, label, anyOf]) => ({
    path: path as string,
    label: label as string,
    anyOf: [...(anyOf as string).matchAll(/"([^"]+)"/g)].map((m) => m[1] as WorkspaceAction),
  }));
  const declared = block.match(/\bpath:/g)?.length ?? 0;
  if (pages.length === 0 || pages.length !== declared) throw new Error(`read ${pages.length} of ${declared} pages from workspacePages: its shape changed`);
  return pages;
}
