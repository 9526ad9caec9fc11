import type { RecordedRequest } from "@gw/testkit";
import { bodyText, envelopeProblem, isServerError, parseJson, saysUnavailable } from "./envelopes";
import type { FuzzCase } from "./fuzz-case";
import type { FuzzTarget } from "./fuzz-target";
import { send, type RawAnswer } from "./raw-http";

/**
 * What every case must get, whatever it sent:
 * - an answer, within the time limit, and never a 5xx. Two are legitimate: a 502/503/504 when an
 *   emulator itself failed during the case (the gateway relays a provider failure), and the 503
 *   `upstream_unavailable` of a model whose circuit breaker opened after such failures, within
 *   its cooldown (services/inference: 5 failures in a row, 30 s);
 * - an `x-request-id` on every answer, and on every 4xx the route's error envelope;
 * - the status the class requires, where it is that precise (401 for a bad key, 413 oversized…);
 * - a 4xx is the gateway's own refusal, with no request at any emulator, unless the class lets a
 *   provider judge the input (`mayRelay`) and an emulator did answer this case with a 4xx;
 * - the next plain call to the same backend still served (a case must not leave a pooled
 *   connection between ingress and a service, a cache or a breaker broken for the next caller);
 * - every process still alive afterwards.
 */
export interface Violation {
  /** Short and stable, for grouping: "5xx", "no envelope", "upstream reached", … */
  kind: string;
  detail: string;
}

export interface CaseOutcome {
  answer: RawAnswer;
  violations: Violation[];
  /** What the emulators received during the case, and during the job it created, if any. */
  upstream: RecordedRequest[];
  /** The job an accepted async call created, as it ended. */
  job?: { status: string; error?: unknown };
}

const REQUEST_TIMEOUT_MS = 10_000;
const BREAKER_COOLDOWN_MS = 35_000;
const JOB_SETTLE_MS = 20_000;

export async function runCase(target: FuzzTarget, c: FuzzCase): Promise<CaseOutcome> {
  target.upstreams.reset();
  const answer = await send(target.public, {
    method: c.method,
    target: c.target,
    headers: { ...c.headers, ...target.keyHeaders(c.key) },
    body: c.body,
    streamed: c.streamed,
    timeoutMs: REQUEST_TIMEOUT_MS,
    agent: c.keepAlive ? target.agent : undefined,
    cut: c.cut,
  });
  const violations: Violation[] = [];
  let upstream = [...target.upstreams.received()];
  let job: CaseOutcome["job"];
  if (c.cut) {
    // No answer to judge: what matters is what the gateway is left with, checked below.
  } else if (answer.kind === "no-answer") {
    const seen =
      upstream.length > 0
        ? `; ${upstream.length} request(s) had reached an emulator (${upstream.map((r) => `${r.path} → ${r.status ?? "unanswered"}`).join(", ")})`
        : "";
    violations.push({ kind: "no answer", detail: `${answer.reason}${seen}` });
  } else {
    const breakerMayBeOpen = Date.now() - target.providerFailedAt < BREAKER_COOLDOWN_MS;
    violations.push(...judge(c, answer, upstream, breakerMayBeOpen));
    job = await settleJob(target, c, answer);
    upstream = [...target.upstreams.received()];
    if (upstream.some(providerFailed)) target.providerFailedAt = Date.now();
    // A job is the async form of the call: its failure must not be the gateway's own 5xx either.
    const breakerError = breakerMayBeOpen && saysUnavailable(job?.error);
    if (job?.status === "failed" && isServerError(job.error) && !upstream.some(providerFailed) && !breakerError) {
      violations.push({ kind: "job failed with a server error", detail: `the job ended failed: ${JSON.stringify(job.error).slice(0, 300)}` });
    }
  }
  const next = await nextCallProblem(target, c);
  if (next) violations.push({ kind: "next call broken", detail: next });
  const dead = await target.deadOrDying();
  if (dead) violations.push({ kind: "process down", detail: dead });
  return { answer, violations, upstream, job };
}

/**
 * A plain call to the backend the case went to, on a keep-alive connection like a real client's;
 * ingress reuses its connections to the services last in, first out, so this one goes over the
 * connection the case just used.
 */
async function nextCallProblem(target: FuzzTarget, c: FuzzCase): Promise<string | undefined> {
  const path = c.target.split("?")[0] ?? "";
  const probe =
    path.startsWith("/v1/async/") || path.startsWith("/v1/tools/webtool/research")
      ? { target: "/v1/async/chat/completions/job_00000000000000000000000000000000", status: 404 }
      : path.startsWith("/v1/tools/")
        ? { target: "/v1/tools/serptool/search?q=canary&engine=google", status: 200 }
        : { target: "/v1/models", status: 200 };
  const answer = await send(target.public, {
    method: "GET",
    target: probe.target,
    headers: target.keyHeaders("valid"),
    timeoutMs: REQUEST_TIMEOUT_MS,
    agent: target.agent,
  });
  if (answer.kind === "no-answer") return `GET ${probe.target} got no answer (${answer.reason})`;
  if (answer.status !== probe.status) return `GET ${probe.target} answered ${answer.status}, not ${probe.status}: ${bodyText(answer.body) || "(empty body)"}`;
  return undefined;
}

/** An emulator answered 5xx, or never answered (the gateway gave up on it). */
const providerFailed = (r: RecordedRequest) => r.status === undefined || r.status >= 500;

function judge(c: FuzzCase, answer: Extract<RawAnswer, { kind: "answer" }>, upstream: RecordedRequest[], breakerMayBeOpen: boolean): Violation[] {
  const out: Violation[] = [];
  const { status } = answer;
  if (status >= 500) {
    const relayed = upstream.some(providerFailed) && [502, 503, 504].includes(status);
    const breaker = breakerMayBeOpen && status === 503 && saysUnavailable(parseJson(answer.body));
    if (!relayed && !breaker) out.push({ kind: `${status}`, detail: `answered ${status}: ${bodyText(answer.body)}` });
  }
  if (!answer.headers["x-request-id"]) out.push({ kind: "no x-request-id", detail: `a ${status} without x-request-id` });
  if (status >= 400 && status < 500 && c.method !== "HEAD") {
    const problem = envelopeProblem(answer, c.envelope);
    if (problem) out.push({ kind: "no envelope", detail: `${status}: ${problem}` });
  }
  if (c.expect?.statuses && !c.expect.statuses.includes(status)) {
    out.push({ kind: "unexpected status", detail: `answered ${status}, expected ${c.expect.statuses.join(" or ")}: ${bodyText(answer.body)}` });
  }
  const relayed = c.mayRelay && upstream.some((r) => r.status !== undefined && r.status >= 400 && r.status < 500);
  if (status >= 400 && status < 500 && upstream.length > 0 && !relayed) {
    out.push({
      kind: "upstream reached",
      detail: `answered ${status} but ${upstream.length} request(s) reached an emulator: ${upstream.map((r) => `${r.method} ${r.path} → ${r.status ?? "?"}`).join(", ")}`,
    });
  }
  return out;
}

/**
 * An accepted job calls its upstream later: it is waited for here, so that the next case's count
 * of upstream requests is its own.
 */
async function settleJob(target: FuzzTarget, c: FuzzCase, answer: Extract<RawAnswer, { kind: "answer" }>): Promise<CaseOutcome["job"]> {
  if (c.method !== "POST" || answer.status >= 300) return;
  const path = c.target.split("?")[0] ?? "";
  const route = /^\/v1\/async\/(.+?)\/*$/.exec(path)?.[1];
  const research = /^\/v1\/tools\/webtool\/research\/*$/.test(path);
  if (!route && !research) return;
  let id: unknown;
  try {
    id = (JSON.parse(answer.body.toString("utf8")) as { id?: unknown }).id;
  } catch {
    return;
  }
  if (typeof id !== "string" || !id.startsWith("job_")) return;
  const poll = route ? `${target.gw.baseURL}/async/${route}/${id}` : `${target.gw.baseURL}/tools/webtool/research/${id}`;
  const deadline = Date.now() + JOB_SETTLE_MS;
  while (Date.now() < deadline) {
    const res = await fetch(poll, { headers: { authorization: `Bearer ${target.key}` } });
    const job = (await res.json().catch(() => ({}))) as { status?: string; error?: unknown };
    if (res.status >= 400) return { status: `poll answered ${res.status}` };
    if (job.status === "completed" || job.status === "failed") return { status: job.status, error: job.error };
    await new Promise((r) => setTimeout(r, 50));
  }
  return { status: "still running" };
}
