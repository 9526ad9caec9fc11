import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Configuration } from "oidc-provider";

export interface TestOidcAccount {
  email: string;
  email_verified?: boolean;
  name?: string;
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The login a test types on the provider's sign-in form (its account id). */
  accounts: Record<string, TestOidcAccount>;
  close(): Promise<void>;
}

/** The one client the test provider knows: what GATEWAY_OIDC_CLIENT_ID and _SECRET are set to. */
export const testOidcClient = { clientId: "gateway-console", clientSecret: "test-oidc-client-secret-0123456789" } as const;

/**
 * A real OpenID Connect provider (panva's oidc-provider, the certified implementation) on a local
 * port, for single sign-on tests: one confidential client that must use PKCE, and the library's
 * development sign-in pages, where any password signs in the account named by `login`.
 */
export async function startTestOidcProvider(options: {
  port: number;
  redirectUris: string[];
  accounts: Record<string, TestOidcAccount>;
}): Promise<TestOidcProvider> {
  const issuer = `http://127.0.0.1:${options.port}`;
  const { clientId, clientSecret } = testOidcClient;
  // Loaded only by the tests that sign in through it: the library warns on import under Node 20.
  const { default: Provider } = await import("oidc-provider");
  const configuration: Configuration = {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ["test-oidc-cookie-key"] },
    ttl: { AccessToken: 600, AuthorizationCode: 600, IdToken: 600, Interaction: 600, Session: 600, Grant: 600 },
    async findAccount(_ctx, sub) {
      const account = options.accounts[sub];
      if (!account) return undefined;
      return { accountId: sub, claims: async () => ({ sub, email: account.email, email_verified: account.email_verified ?? true, name: account.name }) };
    },
  };
  const provider = new Provider(issuer, configuration);
  // http on loopback is what a test has; the library wants to be told it is not behind TLS on purpose.
  provider.proxy = false;
  const server: Server = createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(options.port, "127.0.0.1", resolve));
  if ((server.address() as AddressInfo).port !== options.port) throw new Error("test OIDC provider: wrong port");
  return {
    issuer,
    clientId,
    clientSecret,
    accounts: options.accounts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A browser's trip through the provider with fetch: follows redirects by hand, keeping each host's
 * cookies, fills the development sign-in and consent forms, and stops at the first answer from
 * `stopAt`'s origin that is not a redirect into the provider. Returns that last response's URL and
 * the cookies the gateway set on the way.
 */
export async function walkOidcSignIn(
  start: string,
  login: string,
  providerOrigin: string,
  gatewayCookie?: string,
): Promise<{ finalUrl: string; status: number; gatewayCookies: string[]; location: string | null }> {
  const jars = new Map<string, Map<string, string>>();
  const jarOf = (url: URL) => jars.get(url.host) ?? jars.set(url.host, new Map()).get(url.host)!;
  const keep = (url: URL, res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = (pair ?? "").indexOf("=");
      if (at > 0) jarOf(url).set((pair as string).slice(0, at), (pair as string).slice(at + 1));
    }
  };
  const cookieHeader = (url: URL) => [...jarOf(url)].map(([k, v]) => `${k}=${v}`).join("; ");
  if (gatewayCookie) {
    const [k, v] = gatewayCookie.split("=");
    jarOf(new URL(start)).set(k as string, v as string);
  }
  const gatewayCookies: string[] = [];
  let url = new URL(start);
  let init: RequestInit = { method: "GET" };
  for (let hop = 0; hop < 20; hop++) {
    const res = await fetch(url, { ...init, redirect: "manual", headers: { ...(init.headers as Record<string, string>), cookie: cookieHeader(url) } });
    keep(url, res);
    if (url.origin !== providerOrigin) gatewayCookies.push(...res.headers.getSetCookie());
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location) {
      const next = new URL(location, url);
      if (url.origin !== providerOrigin && next.origin !== providerOrigin && hop > 0)
        return { finalUrl: url.href, status: res.status, gatewayCookies, location: next.href };
      url = next;
      init = { method: "GET" };
      continue;
    }
    if (url.origin === providerOrigin && res.status === 200) {
      const html = await res.text();
      const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
      const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
      if (!action || !prompt) throw new Error(`test OIDC provider: no form on ${url.href}`);
      const body = new URLSearchParams(prompt === "login" ? { prompt, login, password: "any" } : { prompt });
      url = new URL(action.replaceAll("&amp;", "&"), url);
      init = { method: "POST", body, headers: { "content-type": "application/x-www-form-urlencoded" } };
      continue;
    }
    return { finalUrl: url.href, status: res.status, gatewayCookies, location };
  }
  throw new Error("test OIDC provider: too many redirects");
}
