import { timingSafeEqual } from "node:crypto";
import { parse as parseCookies, serialize as serializeCookie } from "cookie";
import type { Request, Response } from "express";
import { consoleCsrfHeader } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { hashSecret, type PeopleStore, type SessionRow, type UserRow } from "./store";

export interface SessionSettings {
  /** A session unused this long ends. */
  idleMs: number;
  /** A session ends this long after sign-in, however busy. */
  absoluteMs: number;
}

const MINUTE = 60_000;
export const defaultSessionSettings: SessionSettings = { idleMs: 8 * 60 * MINUTE, absoluteMs: 7 * 24 * 60 * MINUTE };
export const sessionCookie = "gw_console";
/** last_seen_at is written at most this often per session: reading a page is not a write each time. */
const TOUCH_EVERY_MS = MINUTE;

export interface SignedIn {
  session: SessionRow;
  user: UserRow;
}

/**
 * Server-side sessions behind an opaque cookie: `HttpOnly` (no script reads it), `SameSite=Lax`
 * (no cross-site POST carries it), `Secure` when the browser came over TLS, scoped to /console.
 * Signing in always starts a new session and ends the one the browser had (no fixation).
 */
export class Sessions {
  constructor(
    private readonly store: PeopleStore,
    private readonly settings: SessionSettings,
    private readonly clock: () => number,
  ) {}

  /** The signed-in person, or undefined (no cookie, an unknown, ended or expired session). */
  async read(req: Request): Promise<SignedIn | undefined> {
    const token = tokenOf(req);
    if (!token) return undefined;
    const session = await this.store.session(token);
    if (!session) return undefined;
    const now = this.clock();
    const lastSeen = new Date(session.last_seen_at).getTime();
    if (new Date(session.expires_at).getTime() <= now || now - lastSeen >= this.settings.idleMs) {
      await this.store.deleteSession(session.token_hash);
      return undefined;
    }
    const user = await this.store.userById(session.user_id);
    if (!user) return undefined;
    if (now - lastSeen >= TOUCH_EVERY_MS) await this.store.touchSession(session.token_hash, now);
    return { session, user };
  }

  /** Starts a session for the person, ending the browser's previous one; answers its CSRF token. */
  async start(req: Request, res: Response, userId: string): Promise<string> {
    const previous = tokenOf(req);
    if (previous) await this.store.deleteSession(hashSecret(previous));
    const { token, csrf } = await this.store.createSession(userId, this.clock(), this.settings.absoluteMs);
    res.append("set-cookie", serializeCookie(sessionCookie, token, { ...cookieOptions(req), maxAge: Math.floor(this.settings.absoluteMs / 1000) }));
    return csrf;
  }

  async end(req: Request, res: Response): Promise<void> {
    const token = tokenOf(req);
    if (token) await this.store.deleteSession(hashSecret(token));
    res.append("set-cookie", serializeCookie(sessionCookie, "", { ...cookieOptions(req), maxAge: 0 }));
  }

  async endEverywhere(req: Request, res: Response, userId: string): Promise<void> {
    await this.store.deleteSessionsOf(userId);
    res.append("set-cookie", serializeCookie(sessionCookie, "", { ...cookieOptions(req), maxAge: 0 }));
  }
}

function tokenOf(req: Request): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  const token = parseCookies(header)[sessionCookie];
  return token && token.length <= 100 ? token : undefined;
}

/** The browser came over TLS: ingress (or the proxy before it) says so in x-forwarded-proto. */
export function overTls(req: Request): boolean {
  return (
    req.secure ||
    String(req.headers["x-forwarded-proto"] ?? "")
      .split(",")[0]
      ?.trim() === "https"
  );
}

function cookieOptions(req: Request) {
  return { httpOnly: true, sameSite: "lax", secure: overTls(req), path: "/console" } as const;
}

/**
 * Every state-changing call carries the session's CSRF token in `x-csrf-token` (a header another
 * site's form cannot set), and a browser's Origin, when sent, must be this gateway's own.
 */
export function checkCsrf(req: Request, session: SessionRow): void {
  checkOrigin(req);
  const given = Buffer.from(String(req.headers[consoleCsrfHeader] ?? ""));
  const expected = Buffer.from(session.csrf_token);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new GatewayError("csrf_failed", `Missing or wrong ${consoleCsrfHeader} header: reload the page and try again`);
  }
}

/** A cross-site request names its own origin: refused (sign-in included, against login CSRF). */
export function checkOrigin(req: Request): void {
  const origin = req.headers.origin;
  if (origin === undefined) return;
  const host = String(req.headers["x-forwarded-host"] ?? req.headers.host ?? "");
  let originHost: string | undefined;
  try {
    originHost = new URL(origin).host;
  } catch {
    originHost = undefined;
  }
  if (originHost !== host) throw new GatewayError("csrf_failed", "This request came from another site");
}
