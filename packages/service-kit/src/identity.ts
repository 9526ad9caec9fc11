import { createHmac, timingSafeEqual } from "node:crypto";
import { Identity, internalHeaders } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { redactSecrets, type Logger } from "@gw/logger";
import type { z } from "zod";
import { Sealer } from "./sealed";

/**
 * The identity header: base64url(JSON payload) + "." + base64url(HMAC-SHA256(payload)). The payload
 * carries an issue time (`iat`) so a captured header stops working after `maxAgeSeconds`.
 */

export function signIdentity(identity: Identity, secret: string, now = Date.now()): string {
  const payload = Buffer.from(JSON.stringify({ ...identity, iat: Math.floor(now / 1000) })).toString("base64url");
  return `${payload}.${hmac(payload, secret)}`;
}

export function verifyIdentity(header: string | undefined, secret: string, maxAgeSeconds = 300, now = Date.now()): Identity {
  return verifySigned(header, secret, maxAgeSeconds, now).identity;
}

function verifySigned(header: string | undefined, secret: string, maxAgeSeconds: number, now: number): { identity: Identity; iat: number } {
  if (!header) throw new GatewayError("unauthenticated_internal", "Missing internal identity: call this service through ingress");
  const dot = header.indexOf(".");
  const payload = dot > 0 ? header.slice(0, dot) : "";
  // Compare the signature text exactly: base64url decoding would ignore stray characters.
  const given = Buffer.from(dot > 0 ? header.slice(dot + 1) : "");
  const expected = Buffer.from(hmac(payload, secret));
  if (!payload || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new GatewayError("unauthenticated_internal", "Invalid internal identity signature");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    throw new GatewayError("unauthenticated_internal", "Malformed internal identity");
  }
  const iat = (parsed as { iat?: unknown }).iat;
  if (typeof iat !== "number" || Math.abs(now / 1000 - iat) > maxAgeSeconds) {
    throw new GatewayError("unauthenticated_internal", "Expired internal identity");
  }
  const identity = Identity.safeParse(parsed);
  if (!identity.success) throw new GatewayError("unauthenticated_internal", "Malformed internal identity");
  return { identity: identity.data, iat };
}

/**
 * Signs each identity once and reuses the header while it is fresh: ingress sends the same identity
 * for every request of a cached key, so the JSON, base64 and HMAC work is done about once a minute
 * per key instead of once per request. Keyed by the identity object, which ingress keeps per key.
 */
export class IdentitySigner {
  private readonly signed = new WeakMap<Identity, { header: string; at: number }>();

  constructor(
    private readonly secret: string,
    private readonly refreshMs = 60_000,
  ) {}

  sign(identity: Identity, now = Date.now()): string {
    const hit = this.signed.get(identity);
    if (hit && now - hit.at < this.refreshMs) return hit.header;
    const header = signIdentity(identity, this.secret, now);
    this.signed.set(identity, { header, at: now });
    return header;
  }
}

/**
 * Verifies identity headers, remembering the ones already verified (bounded) so a repeated header
 * costs a map lookup and an age check, not an HMAC, a JSON parse and a schema check.
 */
export class IdentityVerifier {
  private readonly verified = new Map<string, { identity: Identity; iat: number }>();

  constructor(
    private readonly secret: string,
    private readonly maxAgeSeconds = 300,
    private readonly maxEntries = 10_000,
  ) {}

  verify(header: string | undefined, now = Date.now()): Identity {
    const hit = header === undefined ? undefined : this.verified.get(header);
    if (hit && Math.abs(now / 1000 - hit.iat) <= this.maxAgeSeconds) return hit.identity;
    const checked = verifySigned(header, this.secret, this.maxAgeSeconds, now);
    if (this.verified.size >= this.maxEntries) this.verified.clear();
    this.verified.set(header as string, checked);
    return checked.identity;
  }
}

function hmac(payload: string, secret: string, purpose = ""): string {
  return createHmac("sha256", secret).update(purpose).update(payload).digest("base64url");
}

/**
 * Signed claims of another kind than the caller's identity, in the identity header's form but with
 * the HMAC bound to `purpose`, so a header signed for one use is never accepted for another (the
 * console's `x-gw-principal` cannot pass as an `x-gw-identity`, nor the reverse).
 */
export class SignedClaims<T extends z.ZodType> {
  constructor(
    private readonly schema: T,
    private readonly secret: string,
    private readonly purpose: string,
    private readonly maxAgeSeconds = 60,
  ) {}

  sign(claims: z.infer<T> & object, now = Date.now()): string {
    const payload = Buffer.from(JSON.stringify({ ...claims, iat: Math.floor(now / 1000) })).toString("base64url");
    return `${payload}.${hmac(payload, this.secret, `${this.purpose}.`)}`;
  }

  /** The claims, or undefined for a header that is missing, forged, expired or malformed. */
  verify(header: string | undefined, now = Date.now()): z.infer<T> | undefined {
    const dot = header?.indexOf(".") ?? -1;
    if (!header || dot <= 0) return undefined;
    const payload = header.slice(0, dot);
    const given = Buffer.from(header.slice(dot + 1));
    const expected = Buffer.from(hmac(payload, this.secret, `${this.purpose}.`));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    } catch {
      return undefined;
    }
    const iat = (parsed as { iat?: unknown }).iat;
    if (typeof iat !== "number" || Math.abs(now / 1000 - iat) > this.maxAgeSeconds) return undefined;
    const claims = this.schema.safeParse(parsed);
    return claims.success ? claims.data : undefined;
  }
}

/** The seal purpose of the `x-gw-credentials` header, shared by ingress (sealing) and the services. */
export const credentialsTransitPurpose = "credentials-in-transit";

/**
 * Opens the `x-gw-credentials` header ingress adds for an enterprise workspace with its own provider
 * credentials: sealed under the internal secret and bound to the workspace, so a header taken from
 * one workspace's call opens for no other. Repeated headers are answered from a bounded cache.
 */
export class CredentialsReader {
  private readonly sealer: Sealer;
  private readonly opened = new Map<string, Record<string, string> | null>();

  /**
   * `onOpened` hears of every credential the first time it is opened, so the process's logger can
   * censor a workspace's own keys as it does the platform's.
   */
  constructor(
    secret: string,
    private readonly onOpened: (values: string[]) => void = () => undefined,
    private readonly maxEntries = 1_000,
  ) {
    this.sealer = new Sealer(secret, credentialsTransitPurpose);
  }

  read(header: string | undefined, workspaceId: string): Record<string, string> | undefined {
    if (!header) return undefined;
    const key = `${workspaceId} ${header}`;
    let value = this.opened.get(key);
    if (value === undefined) {
      const text = this.sealer.open(header, workspaceId);
      value = text === undefined ? null : (JSON.parse(text) as Record<string, string>);
      if (value) this.onOpened(Object.values(value));
      if (this.opened.size >= this.maxEntries) this.opened.clear();
      this.opened.set(key, value);
    }
    if (value === null) throw new GatewayError("unauthenticated_internal", "Invalid internal credentials header");
    return value;
  }
}

/**
 * A value of the credentials map: the workspace has its own credential for this provider, but
 * ingress could not open it (no master key, or another one). The call fails rather than going out on
 * the platform's credential, which would bill the platform for what the workspace meant to pay.
 */
export const UNOPENED_CREDENTIAL = "";

export function unopenedCredentialError(provider: string): GatewayError {
  return new GatewayError(
    "provider_credential_unavailable",
    `This workspace's own credential for \`${provider}\` could not be opened by the gateway (its master key is missing or changed), so the call was not sent with any other credential. Register the credential again, or ask the gateway's operator.`,
  );
}

/** Guards a service's /v1 routes: only calls signed by ingress get through. */
export function requireIdentity(secret: string, logger?: Logger): import("express").RequestHandler {
  const verifier = new IdentityVerifier(secret);
  const credentials = new CredentialsReader(secret, logger && ((values) => redactSecrets(logger, values)));
  return (req, res, next) => {
    const header = req.headers[internalHeaders.identity];
    const identity = verifier.verify(Array.isArray(header) ? header[0] : header);
    res.locals.identity = identity;
    const sealed = req.headers[internalHeaders.credentials];
    res.locals.credentials = credentials.read(Array.isArray(sealed) ? sealed[0] : sealed, identity.workspace_id);
    next();
  };
}
