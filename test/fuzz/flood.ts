import { readFileSync } from "node:fs";
import { Agent } from "node:http";
import fc from "fast-check";
import { expect, it } from "vitest";
import type { TargetName } from "../e2e/targets";
import { BODY_LIMIT } from "./generators";
import type { FuzzTarget } from "./fuzz-target";
import { send, type RawAnswer, type RawRequest } from "./raw-http";
import type { FuzzSettings } from "./settings";

/**
 * The unauthenticated flood: many requests with random paths (random tool names among them) and
 * random keys, then bodies at the size limit without a key, all at once. The gateway must answer
 * each with a 4xx in an envelope, keep its memory (RSS) within 50 MB of where it started, and keep
 * its metrics bounded: a random path or tool name must never become a label.
 */
const RSS_BOUND = 50 * 1024 * 1024;
const CONCURRENCY = 64;

export interface FloodFigures {
  requests: number;
  perSecond: number;
  rss: { start: number; peak: number; end: number };
  series: { before: number; after: number };
  statuses: Record<string, number>;
}

export function floodTests(mode: TargetName, target: () => FuzzTarget, settings: FuzzSettings): void {
  if (settings.only && settings.only !== "flood") return;
  const scale = mode === "the mesh" ? 1 : 0.2;
  const requests = Math.round(settings.floodRequests * scale);
  const bodies = Math.max(1, Math.round(settings.floodBodies * (mode === "the mesh" ? 1 : 0.125)));
  it(`when ${requests} unauthenticated requests with random paths and keys, then ${bodies} bodies of 32 MiB without a key, flood ${mode}, then every answer is a 4xx in an envelope, RSS stays within 50 MB and no random path becomes a metrics label`, async () => {
    const t = target();
    const pid = mode === "the mesh" ? t.gw.mesh!.mesh.processes.ingress.pid! : process.pid;
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const cases = floodRequests(requests, settings.seed);
    const warmUp = floodRequests(Math.min(1_000, requests), settings.seed + 1);
    const tokens = cases.map((c) => c.token);
    const bad: string[] = [];
    const statuses: Record<string, number> = {};
    const judge = (label: string, answer: RawAnswer) => {
      const status = answer.kind === "answer" ? String(answer.status) : "none";
      statuses[status] = (statuses[status] ?? 0) + 1;
      const problem = floodProblem(answer);
      if (problem && bad.length < 20) bad.push(`${label}: ${problem}`);
    };

    try {
      // Warm-up: the same mix, so that caches, pools and JIT reach their working size first.
      await pool(warmUp, CONCURRENCY, (c) => send(t.public, { ...c.request, agent }).then(() => undefined));
      await pool([1, 2], 2, () => send(t.public, bodyRequest(0)).then(() => undefined));
      const series = { before: (await metrics(t)).series, after: 0 };
      const rss = { start: rssOf(pid), peak: 0, end: 0 };
      rss.peak = rss.start;
      const sampler = setInterval(() => (rss.peak = Math.max(rss.peak, rssOf(pid))), 25);
      const started = performance.now();
      let seconds = 0;
      try {
        await pool(cases, CONCURRENCY, async (c) =>
          judge(`${c.request.method} ${c.request.target.slice(0, 80)}`, await send(t.public, { ...c.request, agent })),
        );
        seconds = (performance.now() - started) / 1000;
        await pool(
          Array.from({ length: bodies }, (_, i) => i),
          bodies,
          async (i) => judge(`32 MiB body #${i}`, await send(t.public, bodyRequest(i))),
        );
      } finally {
        clearInterval(sampler);
      }
      rss.end = rssOf(pid);
      rss.peak = Math.max(rss.peak, rss.end);
      const after = await metrics(t);
      series.after = after.series;
      const leaked = [...after.routes].filter((route) => tokens.some((token) => route.includes(token)));
      const figures: FloodFigures = { requests: requests + bodies, perSecond: Math.round(requests / seconds), rss, series, statuses };
      console.log(describeFigures(mode, figures, after.routes.size));

      expect(bad, `answers that were not a 4xx in an envelope (first 20):\n${bad.join("\n")}`).toEqual([]);
      expect(leaked.slice(0, 10), `random paths or tool names that became route labels (${leaked.length} in all)`).toEqual([]);
      expect(series.after - series.before, "new gw_http_requests_total series during the flood").toBeLessThanOrEqual(20);
      expect(rss.peak - rss.start, `RSS grew from ${mb(rss.start)} to a peak of ${mb(rss.peak)}`).toBeLessThanOrEqual(RSS_BOUND);
    } finally {
      agent.destroy();
    }
  }, 300_000);
}

interface FloodCase {
  request: RawRequest;
  /** The random part of its path, to look for among the metrics' labels. */
  token: string;
}

/** Random paths and keys from a seeded generator: the same flood on every run with the same seed. */
function floodRequests(count: number, seed: number): FloodCase[] {
  const token = fc.stringMatching(/^[a-z][a-z0-9]{9}$/);
  const arb = fc.record({
    token,
    shape: fc.constantFrom("tool", "tool-research", "v1", "model", "async", "route", "root"),
    route: fc.constantFrom("/v1/chat/completions", "/v1/messages", "/v1/embeddings", "/v1/tools/webtool/search", "/v1/tools/serptool/search", "/v1/models"),
    key: fc.oneof(
      fc.constant<string | undefined>(undefined),
      fc.stringMatching(/^[0-9A-Za-z]{40}$/).map((s) => `Bearer gw_live_${s}`),
      fc.string({ maxLength: 60 }).map((s) => `Bearer ${s.replace(/[^\x21-\x7e]/g, "x")}`),
      fc.stringMatching(/^[0-9A-Za-z]{40}$/).map((s) => `Basic ${s}`),
    ),
    method: fc.constantFrom("GET", "POST"),
  });
  return fc.sample(arb, { seed, numRuns: count }).map(({ token, shape, route, key, method }) => {
    const path = {
      tool: `/v1/tools/${token}/search`,
      "tool-research": `/v1/tools/${token}/research/job_${token}`,
      v1: `/v1/${token}`,
      model: `/v1/models/${token}`,
      async: `/v1/async/${token}/job_${token}`,
      route,
      root: `/${token}`,
    }[shape];
    const body = method === "POST" ? Buffer.from(`{"model":"${token}","messages":[{"role":"user","content":"hi"}]}`) : undefined;
    const headers: Record<string, string> = body ? { "content-type": "application/json" } : {};
    if (key) headers.authorization = key;
    return { token, request: { method, target: path, headers, body, timeoutMs: 30_000 } };
  });
}

const bodyRoutes = [
  "/v1/chat/completions",
  "/v1/messages",
  "/v1/embeddings",
  "/v1/async/chat/completions",
  "/v1/tools/webtool/search",
  "/v1/audio/transcriptions",
];

/** A 32 MiB body without a key, streamed (the test process never holds it). */
function bodyRequest(i: number): RawRequest {
  const target = bodyRoutes[i % bodyRoutes.length]!;
  const type = target.endsWith("transcriptions") ? "multipart/form-data; boundary=x" : "application/json";
  return { method: "POST", target, headers: { "content-type": type }, streamed: { bytes: BODY_LIMIT, chunked: i % 4 === 3 }, timeoutMs: 60_000 };
}

function floodProblem(answer: RawAnswer): string | undefined {
  if (answer.kind === "no-answer") return `no answer (${answer.reason})`;
  if (answer.status < 400 || answer.status >= 500) return `status ${answer.status}: ${answer.body.toString("utf8").slice(0, 200)}`;
  if (!answer.headers["x-request-id"]) return `${answer.status} without x-request-id`;
  try {
    const body = JSON.parse(answer.body.toString("utf8")) as { error?: { message?: unknown }; type?: unknown };
    if (typeof body.error?.message !== "string") return `${answer.status} without an error envelope: ${answer.body.toString("utf8").slice(0, 200)}`;
  } catch {
    return `${answer.status} with a body that is not JSON: ${answer.body.toString("utf8").slice(0, 200)}`;
  }
  return undefined;
}

/** Runs `work` over `items`, `concurrency` at a time. */
async function pool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** Resident memory of a process, from /proc/<pid>/status (VmRSS, in kB). */
export function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return Number(/(\d+)/.exec(line ?? "")?.[1] ?? 0) * 1024;
}

/** The number of gw_http_requests_total series on ingress's admin port, and their route labels. */
async function metrics(t: FuzzTarget): Promise<{ series: number; routes: Set<string> }> {
  const res = await fetch(`${t.gw.adminURL}/metrics`, { headers: { authorization: `Bearer ${t.gw.adminToken}` } });
  const text = await res.text();
  const lines = text.split("\n").filter((l) => l.startsWith("gw_http_requests_total{"));
  // The embedded default's admin port shows ingress's registry only; the mesh's, ingress's process.
  const routes = new Set(lines.map((l) => /route="((?:[^"\\]|\\.)*)"/.exec(l)?.[1] ?? ""));
  return { series: lines.length, routes };
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function describeFigures(mode: TargetName, f: FloodFigures, routeLabels: number): string {
  return [
    `flood of ${mode}: ${f.requests} requests, ${f.perSecond} requests/s (the random ones)`,
    `  RSS ${mode === "the mesh" ? "of the ingress process" : "of the whole gateway (and this test process)"}: start ${mb(f.rss.start)}, peak ${mb(f.rss.peak)}, end ${mb(f.rss.end)} (peak − start ${mb(f.rss.peak - f.rss.start)})`,
    `  gw_http_requests_total series: ${f.series.before} before, ${f.series.after} after (${routeLabels} route labels)`,
    `  statuses: ${Object.entries(f.statuses)
      .map(([s, n]) => `${s}×${n}`)
      .join(" ")}`,
  ].join("\n");
}
