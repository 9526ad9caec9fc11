import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { expect, it } from "vitest";
import type { TargetName } from "../e2e/targets";
import { describeCase, type FuzzCase } from "./fuzz-case";
import type { FuzzTarget } from "./fuzz-target";
import { fuzzClasses, runsPerClass, type FuzzClass } from "./generators";
import { runCase, type CaseOutcome } from "./properties";
import type { FuzzSettings } from "./settings";

/** After a first failure, shrinking stops after this long and the smallest failure so far is reported. */
const SHRINK_BUDGET_MS = 15_000;

/**
 * One `it` per class of hostile input, each a fast-check property over every route of the table.
 * The target is started by the caller (one per mode and test file) and handed over lazily.
 */
export function fuzzClassTests(mode: TargetName, target: () => FuzzTarget, settings: FuzzSettings): void {
  const runs = runsPerClass(settings.count);
  for (const cls of fuzzClasses) {
    if (settings.only && settings.only !== cls.name) continue;
    const numRuns = runs.get(cls.name)!;
    it(
      `when ${cls.name} requests reach the public routes, then none gets a 5xx or no answer, every refusal is the gateway's own in the route's envelope, and the gateway stays whole`,
      async () => {
        const message = settings.survey ? await survey(mode, target(), cls, numRuns, settings) : await property(mode, target(), cls, numRuns, settings);
        if (message) expect.fail(message);
      },
      numRuns * 2_000 + SHRINK_BUDGET_MS + 60_000,
    );
  }
}

async function property(mode: TargetName, target: FuzzTarget, cls: FuzzClass, numRuns: number, settings: FuzzSettings): Promise<string | undefined> {
  let firstFailure: number | undefined;
  let previous: FuzzCase | undefined;
  let down = false;
  const details = await fc.check(
    fc.asyncProperty(cls.arbitrary, async (c) => {
      // Once a process is down every case fails; only the one that took it down is worth reporting.
      if (down) return;
      if (firstFailure !== undefined && Date.now() - firstFailure > SHRINK_BUDGET_MS) return;
      const outcome = await runCase(target, c);
      if (settings.verbose) console.log(caseLine(c, outcome));
      const before = previous;
      previous = c;
      if (outcome.violations.length === 0) return;
      firstFailure ??= Date.now();
      if (outcome.violations.some((v) => v.kind === "process down")) {
        down = true;
        if (before) outcome.violations.push({ kind: "note", detail: `the case before this one was:\n${describeCase(before)}` });
      }
      throw new Error(outcome.violations.map((v) => `${v.kind}: ${v.detail}`).join("\n"));
    }),
    { seed: settings.seed, numRuns, path: settings.path, endOnFailure: settings.path !== undefined },
  );
  if (!details.failed) return undefined;
  if (details.counterexample === null) return `fuzz ${cls.name} on ${mode}: ${fc.defaultReportMessage(details)}`;
  const [c] = details.counterexample;
  const file = join(tmpdir(), `gw-fuzz-${mode.replace(/\W+/g, "-")}-${cls.name}-${details.seed}.bin`);
  if (c.body) writeFileSync(file, c.body);
  return [
    `fuzz class ${cls.name} failed on ${mode} after ${details.numRuns} case(s), shrunk ${details.numShrinks} time(s)`,
    `seed ${details.seed}, path "${details.counterexamplePath}"`,
    `replay: pnpm fuzz --mode ${mode === "the mesh" ? "mesh" : "embedded"} --class ${cls.name} --seed ${details.seed} --path "${details.counterexamplePath}"`,
    describeCase(c),
    c.body ? `  whole body in ${file}` : "",
    "violations:",
    String((details.errorInstance as Error)?.message ?? details.errorInstance),
  ]
    .filter(Boolean)
    .join("\n");
}

/**
 * Survey mode: every case runs, failures are grouped by what went wrong (kind and status), with the
 * routes each was seen on and the smallest example; the list is the test's failure message. For a
 * report on the state of the code rather than a gate.
 */
async function survey(mode: TargetName, target: FuzzTarget, cls: FuzzClass, numRuns: number, settings: FuzzSettings): Promise<string | undefined> {
  const groups = new Map<string, { count: number; routes: Map<string, number>; example: FuzzCase; detail: string }>();
  const statuses = new Map<string, number>();
  const size = (c: FuzzCase) => (c.body?.length ?? c.streamed?.bytes ?? 0) + c.target.length;
  let down = false;
  for (const c of lazySample(cls.arbitrary, settings.seed, numRuns)) {
    if (down) break;
    const outcome = await runCase(target, c);
    if (settings.verbose) console.log(caseLine(c, outcome));
    const status = outcome.answer.kind === "answer" ? String(outcome.answer.status) : "none";
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    for (const v of outcome.violations) {
      if (v.kind === "process down") down = true;
      const key = `${v.kind} | status ${status}`;
      const group = groups.get(key) ?? { count: 0, routes: new Map<string, number>(), example: c, detail: v.detail };
      group.count++;
      group.routes.set(routeOf(c), (group.routes.get(routeOf(c)) ?? 0) + 1);
      if (size(c) < size(group.example)) Object.assign(group, { example: c, detail: v.detail });
      groups.set(key, group);
    }
  }
  const histogram = [...statuses]
    .sort()
    .map(([status, n]) => `${status}×${n}`)
    .join(" ");
  console.log(`survey of ${cls.name} on ${mode}: statuses ${histogram}`);
  if (groups.size === 0) return undefined;
  const lines = [`survey of ${cls.name} on ${mode}: ${numRuns} cases (statuses ${histogram}), ${groups.size} kind(s) of failure`];
  for (const [key, g] of [...groups].sort((a, b) => b[1].count - a[1].count)) {
    const routes = [...g.routes].sort((a, b) => b[1] - a[1]);
    const shown = routes
      .slice(0, 8)
      .map(([route, n]) => `${route} ×${n}`)
      .join(", ");
    lines.push(
      `\n# ${key}  (${g.count}×, on ${routes.length} route(s): ${shown}${routes.length > 8 ? ", …" : ""})`,
      describeCase(g.example),
      `  → ${g.detail.slice(0, 600)}`,
    );
  }
  return lines.join("\n");
}

function caseLine(c: FuzzCase, outcome: CaseOutcome): string {
  const a = outcome.answer;
  const head = a.kind === "answer" ? `${a.status} ${a.ms}ms` : `none ${a.ms}ms (${a.reason})`;
  const upstream = outcome.upstream.map((r) => `${r.path}→${r.status ?? "?"}`).join(" ");
  const job = outcome.job ? ` job: ${outcome.job.status}${outcome.job.error ? ` ${JSON.stringify(outcome.job.error).slice(0, 160)}` : ""}` : "";
  return `${head} ${c.method} ${c.target.slice(0, 80)} [${c.cls}: ${c.note}]${upstream ? ` upstream: ${upstream}` : ""}${job}`;
}

/** Cases a batch at a time: a long survey must not hold thousands of multi-megabyte bodies at once. */
function* lazySample<T>(arbitrary: fc.Arbitrary<T>, seed: number, count: number): Generator<T> {
  const batch = 50;
  for (let done = 0; done < count; done += batch) {
    yield* fc.sample(arbitrary, { seed: seed + done, numRuns: Math.min(batch, count - done) });
  }
}

/** The route a case aimed at, without its ids, for grouping. */
function routeOf(c: FuzzCase): string {
  const path = (c.target.split("?")[0] ?? "").replace(/\/job_[^/]*$/, "/{job_id}").replace(/^\/v1\/models\/.+$/, "/v1/models/{id}");
  return `${c.method} ${path.length > 60 ? `${path.slice(0, 60)}…` : path}`;
}
