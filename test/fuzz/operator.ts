import fc from "fast-check";
import { expect, it } from "vitest";
import type { TargetName } from "../e2e/targets";
import { newWorkspaceKey } from "../e2e/targets";
import { bodyText, envelopeProblem } from "./envelopes";
import type { FuzzTarget } from "./fuzz-target";
import { pathByte } from "./generators/request-classes";
import { send } from "./raw-http";
import type { FuzzSettings } from "./settings";

/**
 * The operator's side under hostile text: the admin API (workspaces, keys, audit), the ledger's
 * queries behind it (usage, logs, statements) and the console's sign-in, which anyone can reach on
 * the public port. One hostile value a call, in an id of the path, a query parameter or a string
 * of the body; every answer must be a 2xx or the gateway's own 4xx in OpenAI's envelope, and the
 * gateway must stay whole. Postgres holds what these calls name, so text it cannot hold (U+0000)
 * and bytes that are not UTF-8 are the point.
 */

/** Hostile text, as the decoded string a client meant (the path and query carry its UTF-8, percent-encoded). */
const hostileTexts: readonly string[] = [
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udc00y",
  "\u202e\u2028\ufeff",
  "' OR 1=1 --",
  "%",
  "..",
  "\\",
  "😀".repeat(50),
  "a".repeat(5_000),
  "",
  "null",
  "-1",
  "1e400",
  "2025-02-30",
  "9999999-01-01T00:00:00Z",
  "Mars/Olympus",
  "hour,hour,nope",
  "5xx",
];

/** Raw bytes for a path or query that are not UTF-8 (or are over-long forms of ASCII). */
const rawBytes: readonly string[] = ["%FF", "%C0%80", "%C0%AF", "%ED%A0%80", "%E2%82"];

const pct = (text: string) => [...Buffer.from(text, "utf8")].map(pathByte).join("");

/** A value for the path or the query: hostile text encoded as a client would, or raw bytes. */
const wireValue = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...hostileTexts).map((text) => ({ wire: pct(text), shown: JSON.stringify(text.slice(0, 40)) })) },
  { weight: 1, arbitrary: fc.constantFrom(...rawBytes).map((raw) => ({ wire: raw, shown: raw })) },
);

interface Ids {
  workspaceId: string;
  keyId: string;
}

interface OperatorCall {
  method: "GET" | "POST" | "PATCH";
  /** Path and query as they go on the wire. */
  target: (ids: Ids) => string;
  body?: (ids: Ids) => unknown;
  /** The console's sign-in is on the public port; the rest on the admin port. */
  port: "admin" | "public";
  note: string;
}

const inPath: readonly [OperatorCall["method"], (s: string) => string, unknown?][] = [
  ["GET", (s) => `/admin/workspaces/${s}/keys`],
  ["PATCH", (s) => `/admin/workspaces/${s}`, { plan: "pro" }],
  ["POST", (s) => `/admin/workspaces/${s}/keys`, {}],
  ["PATCH", (s) => `/admin/keys/${s}`, { status: "disabled" }],
  ["GET", (s) => `/admin/workspaces/${s}/statement`],
  ["GET", (s) => `/admin/logs/${s}`],
];

const inQuery: readonly [string, readonly string[]][] = [
  ["/admin/usage", ["workspace_id", "key_id", "model", "from", "to", "group_by", "tz"]],
  ["/admin/logs", ["workspace_id", "key_id", "model", "status", "route", "from", "to", "tz", "limit", "cursor"]],
  ["/admin/audit", ["workspace_id", "from", "to", "cursor"]],
  ["/admin/workspaces/{ws}/statement", ["month", "tz", "format"]],
];

/** Bodies with one string replaced by the hostile text; `{ws}` and `{key}` are the case's own. */
const inBody: readonly [OperatorCall["method"], string, (s: string) => unknown, OperatorCall["port"]][] = [
  ["POST", "/admin/workspaces", (s) => ({ name: s, plan: "pro" }), "admin"],
  ["POST", "/admin/workspaces", (s) => ({ name: "fuzz", plan: s }), "admin"],
  ["POST", "/admin/workspaces", (s) => ({ name: "fuzz", plan: "pro", models: [s] }), "admin"],
  ["POST", "/admin/workspaces", (s) => ({ name: "fuzz", plan: "pro", tools: [s] }), "admin"],
  ["PATCH", "/admin/workspaces/{ws}", (s) => ({ name: s }), "admin"],
  ["PATCH", "/admin/workspaces/{ws}", (s) => ({ timezone: s }), "admin"],
  ["PATCH", "/admin/workspaces/{ws}", (s) => ({ models: [s] }), "admin"],
  ["PATCH", "/admin/workspaces/{ws}", (s) => ({ budget: { monthly_usd: s, mode: "hard" } }), "admin"],
  ["POST", "/admin/workspaces/{ws}/keys", (s) => ({ name: s }), "admin"],
  ["POST", "/admin/workspaces/{ws}/keys", (s) => ({ models: [s] }), "admin"],
  ["PATCH", "/admin/keys/{key}", (s) => ({ name: s }), "admin"],
  ["PATCH", "/admin/keys/{key}", (s) => ({ status: s }), "admin"],
  ["POST", "/console/api/sign-in", (s) => ({ email: s, password: "long enough password" }), "public"],
  ["POST", "/console/api/sign-in", (s) => ({ email: `${s}@example.com`, password: s }), "public"],
  ["POST", "/console/api/sign-in/link", (s) => ({ token: s, password: "long enough password" }), "public"],
];

const fill = (path: string, ids: Ids) => path.replace("{ws}", ids.workspaceId).replace("{key}", ids.keyId);

const operatorCall: fc.Arbitrary<OperatorCall> = fc.oneof(
  fc.record({ at: fc.nat(inPath.length - 1), v: wireValue }).map(({ at, v }): OperatorCall => {
    const [method, path, body] = inPath[at]!;
    return {
      method,
      target: () => path(v.wire),
      body: body === undefined ? undefined : () => body,
      port: "admin",
      note: `${v.shown} as the id in ${path("…")}`,
    };
  }),
  fc.record({ at: fc.nat(inQuery.length - 1), p: fc.nat(), v: wireValue }).map(({ at, p, v }): OperatorCall => {
    const [path, params] = inQuery[at]!;
    const param = params[p % params.length]!;
    return { method: "GET", target: (ids) => `${fill(path, ids)}?${param}=${v.wire}`, port: "admin", note: `${v.shown} as ${param} of ${path}` };
  }),
  fc.record({ at: fc.nat(inBody.length - 1), text: fc.constantFrom(...hostileTexts) }).map(({ at, text }): OperatorCall => {
    const [method, path, body, port] = inBody[at]!;
    return {
      method,
      target: (ids) => fill(path, ids),
      body: () => body(text),
      port,
      note: `${JSON.stringify(text.slice(0, 40))} in the body of ${method} ${path}`,
    };
  }),
);

/** What is wrong with one call's answer, or undefined. */
async function callProblem(target: FuzzTarget, ids: Ids, call: OperatorCall): Promise<string | undefined> {
  const base = call.port === "admin" ? new URL(target.gw.adminURL) : new URL(target.gw.baseURL);
  const body = call.body === undefined ? undefined : Buffer.from(JSON.stringify(call.body(ids)));
  const headers: Record<string, string> = call.port === "admin" ? { authorization: `Bearer ${target.gw.adminToken}` } : { origin: base.origin };
  if (body) Object.assign(headers, { "content-type": "application/json", "content-length": String(body.length) });
  const answer = await send(
    { host: base.hostname, port: Number(base.port) },
    { method: call.method, target: call.target(ids), headers, body, timeoutMs: 15_000 },
  );
  if (answer.kind === "no-answer") return `no answer (${answer.reason})`;
  if (answer.status >= 500) return `${answer.status}: ${bodyText(answer.body)}`;
  if (answer.status >= 400) return envelopeProblem(answer, "openai");
  return undefined;
}

export function operatorFuzzTests(mode: TargetName, target: () => FuzzTarget, settings: FuzzSettings): void {
  if (settings.only && settings.only !== "operator") return;
  // About a tenth of the public classes' share: the surface is small and each case is one call.
  const numRuns = Math.max(30, Math.round(settings.count / 10));
  it(
    "when hostile text reaches the admin API, the ledger's queries and the console's sign-in, then none gets a 5xx or no answer, every refusal is in OpenAI's envelope, and the gateway stays whole",
    async () => {
      const t = target();
      const ids = await newWorkspaceKey(t.gw, { name: "operator-fuzz" });
      const details = await fc.check(
        fc.asyncProperty(operatorCall, async (call) => {
          const problem = (await callProblem(t, ids, call)) ?? (await t.deadOrDying());
          if (problem) throw new Error(`${call.method} ${call.target(ids).slice(0, 200)} (${call.note}): ${problem}`);
        }),
        { seed: settings.seed, numRuns, path: settings.path, endOnFailure: true },
      );
      if (details.failed) {
        expect.fail(
          `fuzz operator on ${mode}: ${String((details.errorInstance as Error)?.message ?? details.errorInstance)}\n` +
            `replay: pnpm fuzz --mode ${mode === "the mesh" ? "mesh" : "embedded"} --class operator --seed ${details.seed} --path "${details.counterexamplePath}"`,
        );
      }
    },
    numRuns * 2_000 + 60_000,
  );
}
