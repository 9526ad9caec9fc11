import { createHash } from "node:crypto";
import express, { type Express } from "express";
import type { z } from "zod";
import { AdmissionClaims, type AdmissionAnswer, admissionHeader, admissionPurpose, AdmissionRequest, type AdmittedLine, type TokenTicket } from "@gw/contracts";
import { fromZodError, GatewayError } from "@gw/errors";
import { allowedByAll, routeLabel, SignedClaims } from "@gw/service-kit";
import { identityOf } from "../auth/authenticator";
import type { BudgetGate } from "../budgets/budget-gate";
import type { CredentialRelay } from "../credentials/credential-relay";
import { estimateTokenParts } from "../limits/estimate";
import { rateLimitError, type RateLimitGate } from "../limits/rate-limit-gate";
import { captureRetention } from "../logs/body-capture";
import type { IdentityStore, KeyPrincipal } from "../store/identity-store";

export interface AdmissionDeps {
  store: IdentityStore;
  rateLimits: RateLimitGate;
  budgets: BudgetGate | undefined;
  credentials: CredentialRelay;
  internalSecret: string;
  rateWindowMs: number;
}

/** When the limiter or the budgets cannot answer (failing closed), the batch asks again after this long. */
const UNAVAILABLE_WAIT_MS = 2_000;
/** A batch's lines can be as large as a chat body; the signature is checked before any of it is read. */
const ADMISSION_BODY_LIMIT = "256mb";

/**
 * `POST /internal/admissions` on the admin port: the jobs service asks, for a batch's next lines,
 * whether the batch's key may run them now. Each line is held to what its regular call would be at
 * the door: the key still valid, the model in its allow-lists, its budgets' worst case, then the
 * rate limits; the first line the limits have no room for ends the answer, with when to ask again.
 * The call is signed with the internal secret for the batch's workspace and the exact body sent.
 */
export function mountAdmissions(app: Express, deps: AdmissionDeps): void {
  const claims = new SignedClaims(AdmissionClaims, deps.internalSecret, admissionPurpose);
  app.post(
    "/internal/admissions",
    routeLabel("/internal/admissions"),
    (req, res, next) => {
      const header = req.headers[admissionHeader];
      const claimed = claims.verify(Array.isArray(header) ? header[0] : header);
      if (!claimed) throw new GatewayError("unauthenticated_internal", "Missing or invalid admission signature");
      res.locals.claims = claimed;
      next();
    },
    express.raw({ limit: ADMISSION_BODY_LIMIT, type: () => true }),
    async (req, res) => {
      const claimed = res.locals.claims as z.infer<typeof AdmissionClaims>;
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      if (createHash("sha256").update(raw).digest("hex") !== claimed.body_sha256) {
        throw new GatewayError("unauthenticated_internal", "The admission signature is for another body");
      }
      let body: unknown;
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        throw new GatewayError("invalid_request", "Invalid body: not valid JSON");
      }
      const parsed = AdmissionRequest.safeParse(body);
      if (!parsed.success) throw fromZodError(parsed.error);
      const ask = parsed.data;
      if (ask.workspace_id !== claimed.workspace_id) throw new GatewayError("unauthenticated_internal", "The signature is for another workspace");
      const answer = await admit(deps, ask);
      // A caller gone before the answer reached it (its time-out, a reset) will not run these lines:
      // what was reserved for them is given back, as for a call refused at the door. It may have gone
      // while they were being admitted, its close already past.
      if (res.closed) {
        giveBack(deps, answer);
        return;
      }
      res.once("close", () => {
        if (!res.writableFinished) giveBack(deps, answer);
      });
      res.json(answer);
    },
  );
}

async function admit(deps: AdmissionDeps, ask: AdmissionRequest): Promise<AdmissionAnswer> {
  const principal = await deps.store.findByKeyId(ask.key_id);
  const refusal = principal?.workspace.id === ask.workspace_id ? keyRefusal(principal) : invalidKey();
  if (refusal || !principal) return { lines: ask.bodies.map(() => refused(refusal ?? invalidKey())) };
  const identity = identityOf(principal);
  const lines: AdmittedLine[] = [];
  try {
    for (const body of ask.bodies) {
      const line = await admitLine(deps, principal, identity.models, ask.route, body);
      lines.push(line);
      if (line.kind === "wait") break;
    }
    const credentials = deps.credentials.headerFor(principal);
    const captureDays = captureRetention(principal);
    return { identity, ...(credentials ? { credentials } : {}), ...(captureDays !== undefined ? { capture_days: captureDays } : {}), lines };
  } catch (err) {
    // The jobs service gets an error, not these lines: what was reserved for those admitted goes back.
    giveBack(deps, { lines });
    throw err;
  }
}

/** One line, as limitRate charges a call at the door: its budget hold and its rate-limit charge, or why not. */
async function admitLine(
  deps: AdmissionDeps,
  principal: KeyPrincipal,
  models: readonly (readonly string[])[],
  route: string,
  body: Record<string, unknown>,
): Promise<AdmittedLine> {
  const model = typeof body.model === "string" ? body.model : undefined;
  if (model !== undefined && !allowedByAll(models, model)) {
    return refused(new GatewayError("model_not_allowed", `The model \`${model}\` is not available to this key`, { param: "model" }));
  }
  const parts = estimateTokenParts(route, body);
  const tokens = parts.input + parts.output;
  const { budgets, rateLimits } = deps;
  let hold: TokenTicket["budget"];
  try {
    hold = budgets?.applies(principal)
      ? await budgets.admit(principal, { route, model, tool: undefined, body, uploadBytes: 0, tokens: parts, job: true })
      : undefined;
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    return err.code === "upstream_unavailable" ? { kind: "wait", retry_after_ms: UNAVAILABLE_WAIT_MS } : refused(err);
  }
  const giveBack = () => hold && budgets!.settle(hold, principal.workspace.id, principal.keyId, { kind: "failed" });
  let admission: Awaited<ReturnType<RateLimitGate["admit"]>>;
  try {
    admission = await rateLimits.admit(principal, tokens);
  } catch {
    giveBack();
    return { kind: "wait", retry_after_ms: UNAVAILABLE_WAIT_MS };
  }
  if (admission && !admission.allowed) {
    giveBack();
    const { denial } = admission;
    return denial.retryAfterMs === undefined ? refused(rateLimitError(denial, deps.rateWindowMs)) : { kind: "wait", retry_after_ms: denial.retryAfterMs };
  }
  const ticket = admission && tokens > 0 ? admission.ticket : undefined;
  if (!ticket && !hold) return { kind: "admitted" };
  return {
    kind: "admitted",
    ticket: {
      workspace_id: principal.workspace.id,
      key_id: principal.keyId,
      bucket: ticket?.bucket ?? 0,
      tokens: ticket?.tokens ?? 0,
      ...(hold ? { budget: hold } : {}),
    },
  };
}

/** Returns every reservation an answer made: its lines will not run. */
function giveBack(deps: AdmissionDeps, answer: AdmissionAnswer): void {
  for (const line of answer.lines) {
    if (line.kind !== "admitted" || !line.ticket) continue;
    const { ticket } = line;
    if (ticket.tokens > 0) deps.rateLimits.settle({ workspaceId: ticket.workspace_id, keyId: ticket.key_id, bucket: ticket.bucket, tokens: ticket.tokens }, 0);
    if (ticket.budget) deps.budgets?.settle(ticket.budget, ticket.workspace_id, ticket.key_id, { kind: "failed" });
  }
}

/** Why the batch's key can run nothing now, as the door would refuse its calls. */
function keyRefusal(principal: KeyPrincipal): GatewayError | undefined {
  if (principal.keyStatus === "revoked") return invalidKey();
  if (principal.keyStatus === "disabled") return new GatewayError("key_disabled", "This API key is disabled");
  if (principal.workspace.subscription !== "active") return new GatewayError("subscription_inactive", "The workspace has no active subscription");
  return undefined;
}

function invalidKey(): GatewayError {
  return new GatewayError("invalid_api_key", "Invalid API key: the key that created this batch is unknown or has been revoked");
}

function refused(error: GatewayError): AdmittedLine {
  return { kind: "refused", status: error.status, error: error.toEnvelope("openai") };
}
