import * as client from "openid-client";
import { GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** What the identity provider vouched for, from a validated ID token. */
export interface OidcIdentity {
  /** "<issuer> <sub>": stable for the person at this provider, whatever their email becomes. */
  subject: string;
  email: string | undefined;
  emailVerified: boolean;
  name: string | undefined;
}

/**
 * OpenID Connect sign-in with openid-client (authorization code, PKCE S256, state and nonce): the
 * provider's metadata is discovered on first use (and again after a failure), so the console starts
 * while the provider is down. An `http:` issuer is accepted only on a loopback address (tests and
 * local providers); anything else must be `https:`.
 */
export class OidcSignIn {
  private config: Promise<client.Configuration> | undefined;

  constructor(
    private readonly settings: OidcSettings,
    private readonly logger: Logger,
  ) {}

  get issuer(): string {
    return this.settings.issuer;
  }

  private discover(): Promise<client.Configuration> {
    this.config ??= (async () => {
      const issuer = new URL(this.settings.issuer);
      const insecure = issuer.protocol === "http:" && isLoopback(issuer.hostname);
      return client.discovery(
        issuer,
        this.settings.clientId,
        this.settings.clientSecret,
        undefined,
        insecure ? { execute: [client.allowInsecureRequests] } : undefined,
      );
    })().catch((err: unknown) => {
      this.config = undefined;
      this.logger.warn({ err, issuer: this.settings.issuer }, "console: the identity provider could not be reached");
      throw new GatewayError("upstream_unavailable", "Single sign-on is unavailable: the identity provider did not answer; try again", { cause: err });
    });
    return this.config;
  }

  /** Where to send the browser, and what to keep until it comes back. */
  async start(redirectUri: string): Promise<{ url: string; state: string; codeVerifier: string; nonce: string }> {
    const config = await this.discover();
    const codeVerifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: "openid email profile",
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: "S256",
      state,
      nonce,
    });
    return { url: url.href, state, codeVerifier, nonce };
  }

  /** Exchanges the code the browser brought back (checking state, PKCE and nonce) for the person's identity. */
  async finish(callbackUrl: URL, checks: { state: string; codeVerifier: string; nonce: string }): Promise<OidcIdentity> {
    const config = await this.discover();
    let claims: (client.IDToken & Partial<client.UserInfoResponse>) | undefined;
    try {
      const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
      // Many providers keep the profile claims for the userinfo endpoint; that answer must be about the same subject.
      if (claims && claims.email === undefined) claims = { ...(await client.fetchUserInfo(config, tokens.access_token, claims.sub)), ...claims };
    } catch (err) {
      this.logger.info({ err: (err as Error).message }, "console: single sign-on refused");
      throw new GatewayError("invalid_credentials", "Single sign-on failed: the identity provider's answer did not check out; try again");
    }
    if (!claims) throw new GatewayError("invalid_credentials", "Single sign-on failed: no ID token");
    return {
      subject: `${claims.iss} ${claims.sub}`,
      email: typeof claims.email === "string" ? claims.email.trim().toLowerCase() : undefined,
      emailVerified: claims.email_verified === true,
      name: typeof claims.name === "string" ? claims.name : undefined,
    };
  }
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "127.0.0.1" || host === "[::1]";
}

/**
 * Where a browser may be sent after signing in: a path of the console on this origin, nothing else
 * (no scheme, no `//host`, no backslash tricks), so a crafted link cannot bounce a person elsewhere.
 */
export function safeReturnTo(value: unknown): string {
  const fallback = "/console/";
  if (typeof value !== "string" || value.length > 2000) return fallback;
  if (!/^\/console(\/|$)/.test(value) || value.startsWith("//") || /[\\\r\n\t]/.test(value)) return fallback;
  try {
    const resolved = new URL(value, "http://gateway.invalid");
    return resolved.host === "gateway.invalid" && /^\/console(\/|$)/.test(resolved.pathname) ? resolved.pathname + resolved.search + resolved.hash : fallback;
  } catch {
    return fallback;
  }
}
