import { parse as parseCookies, serialize as serializeCookie } from "cookie";
import type { Router } from "express";
import { type ConsoleSession, LinkSignInBody, SignInBody } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { membershipsOf, signedInOf } from "../access";
import { checkPassword, hashPassword } from "../passwords";
import { safeReturnTo } from "../oidc";
import { checkOrigin, overTls } from "../sessions";
import { publicUser, type UserRow } from "../store";
import { clientAddress, type ConsoleContext, gatewayOrigin } from "./context";

const oidcCookie = "gw_oidc";

/** Signing in and out (docs/console.md): password, single-use link; sessions as cookies. */
export function mountAuthRoutes(router: Router, ctx: ConsoleContext, signedIn: import("express").RequestHandler): void {
  const answerSession = async (user: UserRow, csrf: string): Promise<ConsoleSession> => ({
    user: publicUser(user),
    csrf_token: csrf,
    memberships: await membershipsOf(ctx, user),
  });

  router.get("/config", (_req, res) => {
    res.json({ oidc: ctx.oidc ? { enabled: true, issuer: ctx.oidc.issuer } : { enabled: false } });
  });

  // Single sign-on: off to the identity provider with PKCE, state and nonce; back with a code.
  router.get("/oidc/start", async (req, res) => {
    if (!ctx.oidc) throw new GatewayError("not_found", "Single sign-on is not configured on this gateway (GATEWAY_OIDC_ISSUER)");
    const origin = gatewayOrigin(ctx, req) ?? "";
    const redirectUri = `${origin}/console/api/oidc/callback`;
    const flow = await ctx.oidc.start(redirectUri);
    await ctx.store.startOidcFlow(flow.state, { ...flow, returnTo: safeReturnTo(req.query.return_to), redirectUri }, ctx.clock());
    res.append(
      "set-cookie",
      serializeCookie(oidcCookie, flow.state, { httpOnly: true, sameSite: "lax", secure: overTls(req), path: "/console/api/oidc", maxAge: 600 }),
    );
    res.redirect(302, flow.url);
  });

  router.get("/oidc/callback", async (req, res) => {
    const fail = (message: string) => res.redirect(302, `/console/sign-in?error=${encodeURIComponent(message)}`);
    if (!ctx.oidc) throw new GatewayError("not_found", "Single sign-on is not configured on this gateway (GATEWAY_OIDC_ISSUER)");
    res.append("set-cookie", serializeCookie(oidcCookie, "", { httpOnly: true, sameSite: "lax", secure: overTls(req), path: "/console/api/oidc", maxAge: 0 }));
    // The browser that started the flow, and only it, may finish it: the state is in its cookie.
    const state = parseCookies(req.headers.cookie ?? "")[oidcCookie];
    if (!state || req.query.state !== state) return fail("Single sign-on did not start in this browser; try again");
    const flow = await ctx.store.takeOidcFlow(state, ctx.clock(), 10 * 60_000);
    if (!flow) return fail("Single sign-on took too long or was already used; try again");
    const at = req.originalUrl.indexOf("?");
    const callback = new URL(`${flow.redirect_uri}${at >= 0 ? req.originalUrl.slice(at) : ""}`);
    let identity: Awaited<ReturnType<NonNullable<typeof ctx.oidc>["finish"]>>;
    try {
      identity = await ctx.oidc.finish(callback, { state, codeVerifier: flow.code_verifier, nonce: flow.nonce });
    } catch (err) {
      return fail((err as Error).message);
    }
    let user = await ctx.store.userBySubject(identity.subject);
    if (!user && identity.email && identity.emailVerified) {
      // A person the gateway knows by a verified address: their SSO identity is linked to them.
      user = await ctx.store.userByEmail(identity.email);
      if (user && !user.oidc_subject) await ctx.store.updateUser(user.id, { oidcSubject: identity.subject, name: user.name ?? identity.name });
      else if (user) user = undefined;
    }
    if (!user) return fail(`No console account for ${identity.email ?? "this identity"}: ask a workspace owner for an invitation`);
    await ctx.sessions.start(req, res, user.id);
    await ctx.store.audit({ actor: user.email, action: "person.sign_in", targetKind: "person", targetId: user.id, detail: { method: "oidc" } });
    res.redirect(302, flow.return_to);
  });

  router.post("/sign-in", async (req, res) => {
    checkOrigin(req);
    const body = SignInBody.parse(req.body ?? {});
    const address = clientAddress(req);
    await ctx.throttle.check(body.email, address);
    const user = await ctx.store.userByEmail(body.email);
    // The same work and the same answer whether or not the account exists.
    if (!(await checkPassword(user?.password_hash, body.password)) || !user) {
      await ctx.throttle.failed(body.email, address);
      throw new GatewayError("invalid_credentials", "Wrong email or password");
    }
    await ctx.throttle.succeeded(body.email);
    const csrf = await ctx.sessions.start(req, res, user.id);
    await ctx.store.audit({ actor: user.email, action: "person.sign_in", targetKind: "person", targetId: user.id, detail: { method: "password" } });
    res.json(await answerSession(user, csrf));
  });

  router.post("/sign-in/link", async (req, res) => {
    checkOrigin(req);
    const body = LinkSignInBody.parse(req.body ?? {});
    const passwordHash = body.password === undefined ? undefined : await hashPassword(body.password);
    const user = await ctx.store.transaction(async (tx) => {
      const link = await tx.consumeLink(body.token, ctx.clock());
      if (!link) throw new GatewayError("invalid_request", "This link has been used already or has expired; ask for a new one", { param: "token" });
      const person = link.user_id ? await tx.userById(link.user_id) : await tx.ensureUser(link.email);
      if (!person) throw new GatewayError("invalid_request", "This link's account no longer exists", { param: "token" });
      // Without SSO a person needs a password to ever come back; with it, they may use SSO alone.
      if (person.password_hash === null && passwordHash === undefined && !person.oidc_subject && !ctx.oidc) {
        // Rolled back with the transaction: the link stays good for the try with a password.
        throw new GatewayError("invalid_request", "Choose a password (at least 12 characters) to finish signing in", { param: "password" });
      }
      await tx.updateUser(person.id, { passwordHash, name: body.name || undefined });
      if (link.workspace_id && link.role) {
        await tx.setMembership(link.workspace_id, person.id, link.role);
        await tx.audit({
          actor: person.email,
          action: "member.join",
          workspaceId: link.workspace_id,
          targetKind: "person",
          targetId: person.id,
          detail: { role: link.role, invited_by: link.created_by },
        });
      }
      return (await tx.userById(person.id)) as UserRow;
    });
    const csrf = await ctx.sessions.start(req, res, user.id);
    res.json(await answerSession(user, csrf));
  });

  router.get("/session", signedIn, async (_req, res) => {
    const { user, session } = signedInOf(res);
    res.json(await answerSession(user, session.csrf_token));
  });

  router.post("/sign-out", signedIn, async (req, res) => {
    await ctx.sessions.end(req, res);
    res.status(204).end();
  });

  router.post("/sign-out/everywhere", signedIn, async (req, res) => {
    const { user } = signedInOf(res);
    await ctx.sessions.endEverywhere(req, res, user.id);
    await ctx.store.audit({ actor: user.email, action: "person.sign_out_everywhere", targetKind: "person", targetId: user.id });
    res.status(204).end();
  });
}
