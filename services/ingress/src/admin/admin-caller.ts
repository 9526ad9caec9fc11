import { createHash, timingSafeEqual } from "node:crypto";
import type { RequestHandler, Response } from "express";
import { ConsolePrincipal, principalHeader, principalPurpose } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { SignedClaims } from "@gw/service-kit";

/**
 * Who calls the admin API: the operator's admin token (every workspace), or a person acting through
 * the console, in the console's signed `x-gw-principal` header. The console checks the person's
 * role; this port still holds the person to the one workspace the console named (every workspace
 * for a platform operator), so a mistake there cannot reach another workspace's data.
 */
export type AdminCaller = { kind: "token" } | { kind: "person"; principal: ConsolePrincipal };

export function consolePrincipals(internalSecret: string): SignedClaims<typeof ConsolePrincipal> {
  return new SignedClaims(ConsolePrincipal, internalSecret, principalPurpose);
}

export function requireAdmin(token: string, principals: SignedClaims<typeof ConsolePrincipal>): RequestHandler {
  const expected = createHash("sha256").update(token).digest();
  return (req, res, next) => {
    const match = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "");
    if (match) {
      const given = createHash("sha256")
        .update(match[1] as string)
        .digest();
      if (!timingSafeEqual(given, expected)) throw new GatewayError("invalid_api_key", "Missing or invalid admin token");
      res.locals.adminCaller = { kind: "token" } satisfies AdminCaller;
      return next();
    }
    const header = req.headers[principalHeader];
    const principal = principals.verify(Array.isArray(header) ? header[0] : header);
    if (!principal) throw new GatewayError("invalid_api_key", "Missing or invalid admin token");
    res.locals.adminCaller = { kind: "person", principal } satisfies AdminCaller;
    next();
  };
}

const callerOf = (res: Response): AdminCaller => res.locals.adminCaller as AdminCaller;

/** The one workspace the caller may touch, or undefined for every workspace. */
export function callerScope(res: Response): string | undefined {
  const caller = callerOf(res);
  return caller.kind === "person" && caller.principal.workspace_id !== "*" ? caller.principal.workspace_id : undefined;
}

/** Refuses a workspace outside the caller's scope as if it did not exist. */
export function assertInScope(res: Response, workspaceId: string, what = "workspace"): void {
  const scope = callerScope(res);
  if (scope !== undefined && scope !== workspaceId) throw new GatewayError("not_found", `No such ${what}`);
}

/** Platform-wide calls (listing or creating workspaces) are the operator's. */
export function assertPlatform(res: Response): void {
  if (callerScope(res) !== undefined) throw new GatewayError("forbidden", "Only a platform operator may do this");
}

/** The person to name in the audit trail; undefined for the admin token. */
export function actorOf(res: Response): string | undefined {
  const caller = callerOf(res);
  return caller.kind === "person" ? caller.principal.email : undefined;
}

/** The console user making a change, recorded on what it creates (a key's `created_by`). */
export function personOf(res: Response): string | undefined {
  const caller = callerOf(res);
  return caller.kind === "person" ? caller.principal.user_id : undefined;
}
