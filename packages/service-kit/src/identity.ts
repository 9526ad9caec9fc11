import { createHmac, timingSafeEqual } from "node:crypto";
import { Identity, internalHeaders } from "@gw/contracts";
import { GatewayError } from "@gw/errors";

/**
 * The identity header: base64url(JSON payload) + "." + base64url(HMAC-SHA256(payload)). The payload
 * carries an issue time (`iat`) so a captured header stops working after `maxAgeSeconds`.
 */

export function signIdentity(identity: Identity, secret: string, now = Date.now()): string {
  const payload = Buffer.from(JSON.stringify({ ...identity, iat: Math.floor(now / 1000) })).toString("base64url");
  return `${payload}.${hmac(payload, secret)}`;
}

export function verifyIdentity(header: string | undefined, secret: string, maxAgeSeconds = 300, now = Date.now()): Identity {
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
  return identity.data;
}

function hmac(payload: string, secret: string): string {
  return createHmac("sha256", secret).update(payload).digest("base64url");
}

/** Guards a service's /v1 routes: only calls signed by ingress get through. */
export function requireIdentity(secret: string): import("express").RequestHandler {
  return (req, res, next) => {
    const header = req.headers[internalHeaders.identity];
    res.locals.identity = verifyIdentity(Array.isArray(header) ? header[0] : header, secret);
    next();
  };
}
