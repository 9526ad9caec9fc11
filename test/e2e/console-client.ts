import type { ConsoleSession } from "@gw/contracts";
import { freePort, startTestOidcProvider, type TestOidcAccount, type TestOidcProvider, testOidcClient } from "@gw/testkit";
import { type GatewayTarget, startGatewayTarget, type TargetName } from "./targets";

export interface ConsoleAnswer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T & { error?: { message: string; code: string; param: string | null } };
}

/**
 * A browser's side of the console API, as a test drives it: the session cookie kept as a browser
 * would (only what Set-Cookie gives), and the CSRF token sent on every change.
 */
export class ConsoleBrowser {
  cookie: string | undefined;
  csrf: string | undefined;
  session: ConsoleSession | undefined;

  constructor(readonly origin: string) {}

  async call<T = Record<string, unknown>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ConsoleAnswer<T>> {
    const res = await fetch(`${this.origin}/console/api${path}`, {
      method,
      redirect: "manual",
      headers: {
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...(this.csrf && method !== "GET" ? { "x-csrf-token": this.csrf } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const [name, value] = (pair ?? "").split("=");
      if (name === "gw_console") this.cookie = value ? `gw_console=${value}` : undefined;
    }
    const text = await res.text();
    let parsed: unknown = {};
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = { text };
    }
    const answer = { status: res.status, headers: res.headers, body: parsed as ConsoleAnswer<T>["body"] };
    if (res.ok && (path === "/sign-in" || path === "/sign-in/link")) this.signedIn(answer.body as unknown as ConsoleSession);
    return answer;
  }

  private signedIn(session: ConsoleSession): void {
    this.session = session;
    this.csrf = session.csrf_token;
  }

  /** Signs in with a single-use link's token (an invitation, a first sign-in), setting a password. */
  async acceptLink(link: string, password: string): Promise<ConsoleAnswer<ConsoleSession>> {
    const token = new URL(link, this.origin).hash.replace(/^#token=/, "");
    return this.call<ConsoleSession>("POST", "/sign-in/link", { token, password });
  }
}

/** The operator the gateway's admin token creates (as `pnpm gw user create --operator` does), signed in. */
export async function signInOperator(origin: string, adminURL: string, adminToken: string, email: string, password: string): Promise<ConsoleBrowser> {
  const res = await fetch(`${adminURL}/admin/users`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ email, operator: true }),
  });
  if (res.status !== 201) throw new Error(`POST /admin/users answered ${res.status}: ${await res.text()}`);
  const { link } = (await res.json()) as { link: string };
  const browser = new ConsoleBrowser(origin);
  const signed = await browser.acceptLink(link, password);
  if (signed.status !== 200) throw new Error(`operator sign-in answered ${signed.status}: ${JSON.stringify(signed.body)}`);
  return browser;
}

/**
 * A gateway whose console signs people in through a local OpenID provider too: the provider's port
 * is fixed first (the gateway discovers it only when someone uses SSO), then both start.
 */
export async function startConsoleGateway(
  name: TargetName,
  configYaml: string,
  env: Record<string, string>,
  accounts: Record<string, TestOidcAccount>,
): Promise<{ gw: GatewayTarget; origin: string; idp: TestOidcProvider }> {
  const idpPort = await freePort();
  const gw = await startGatewayTarget(name, configYaml, {
    ...env,
    GATEWAY_OIDC_ISSUER: `http://127.0.0.1:${idpPort}`,
    GATEWAY_OIDC_CLIENT_ID: testOidcClient.clientId,
    GATEWAY_OIDC_CLIENT_SECRET: testOidcClient.clientSecret,
  });
  const origin = gw.baseURL.replace(/\/v1$/, "");
  const idp = await startTestOidcProvider({ port: idpPort, redirectUris: [`${origin}/console/api/oidc/callback`], accounts });
  return { gw, origin, idp };
}
