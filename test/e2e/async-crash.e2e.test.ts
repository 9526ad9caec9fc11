import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort, startOpenAIUpstream, startTavilyUpstream, type UpstreamEmulator } from "@gw/testkit";
import { eventually, NATS_BIN, startPrivateNats, startTestMesh, type RunningMesh } from "./harness";
import { newWorkspaceKey, testPlans } from "./targets";

/**
 * No job is lost when a process dies: with 200 jobs in flight, kill -9 the inference process, kill -9
 * the jobs process, or restart NATS (a private server with its own store, so other tests never see
 * it). Every job must end `completed` with its own answer; the upstream may see a job twice only
 * because a delivery was cut short (at-least-once), and the job's state absorbs it.
 */
const JOBS = 200;
const UPSTREAM_KEY = "sk-crash-upstream";

let oa: UpstreamEmulator;
beforeAll(async () => {
  oa = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
});
afterAll(() => oa?.close());
afterEach(() => oa.reset());

const config = () => `
providers:
  oa: { kind: openai, base_url: "${oa.url}", api_key_env: CRASH_OA }
models:
  gpt: { type: chat, routes: [{ provider: oa, model: gpt-4o-mini }] }
${testPlans}`;

interface Job {
  id: string;
  status: string;
  result?: { choices: { message: { content: string } }[] };
}

/** Starts the mesh, creates 200 jobs (each upstream call takes 100 ms), and returns when the work is under way. */
async function jobsInFlight(gw: RunningMesh): Promise<{ key: string; ids: string[] }> {
  const { key } = await newWorkspaceKey(gw, { name: "crash" });
  oa.script(...Array.from({ length: JOBS * 3 }, () => ({ delayMs: 100 })));
  const ids: string[] = [];
  for (let batch = 0; batch < JOBS; batch += 25) {
    const created = await Promise.all(
      Array.from({ length: 25 }, async (_, i) => {
        const res = await fetch(`${gw.baseURL}/async/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt", messages: [{ role: "user", content: `crash-${batch + i}` }] }),
        });
        expect(res.status).toBe(202);
        return ((await res.json()) as Job).id;
      }),
    );
    ids.push(...created);
  }
  await eventually(() => oa.requests.length >= 20, 30_000);
  return { key, ids };
}

/** Every job ends completed with the answer to its own message, having reached the upstream, few of them twice. */
async function expectAllCompleted(gw: RunningMesh, key: string, ids: string[]): Promise<void> {
  const finished = new Map<string, Job>();
  await eventually(async () => {
    const open = ids.filter((id) => !finished.has(id));
    await Promise.all(
      open.slice(0, 50).map(async (id) => {
        const res = await fetch(`${gw.baseURL}/async/chat/completions/${id}`, { headers: { authorization: `Bearer ${key}` } });
        if (!res.ok) return;
        const job = (await res.json()) as Job;
        if (job.status === "completed" || job.status === "failed") finished.set(id, job);
      }),
    );
    return finished.size === ids.length;
  }, 120_000);
  // Each job reached the upstream at least once; repeats come only from deliveries a crash cut short.
  const calls = new Map<string, number>();
  for (const r of oa.requests) {
    const text = JSON.stringify(r.body).match(/crash-\d+/)?.[0];
    if (text) calls.set(text, (calls.get(text) ?? 0) + 1);
  }
  const repeats = [...calls.values()].reduce((sum, n) => sum + n - 1, 0);
  // A finished job stays as it is: polled again, the same answer.
  const again = await fetch(`${gw.baseURL}/async/chat/completions/${ids[0]}`, { headers: { authorization: `Bearer ${key}` } });
  const againBody: unknown = await again.json();
  // Everything checked at once, so that a failure shows all that went wrong (and the mesh's log).
  const wrong = ids.flatMap((id, i) => {
    const job = finished.get(id)!;
    return job.status === "completed" && job.result?.choices[0]?.message.content?.includes(`crash-${i}`) ? [] : [JSON.stringify(job).slice(0, 400)];
  });
  const verdict = {
    wrongJobs: wrong.slice(0, 5),
    wrongCount: wrong.length,
    jobsReachingTheUpstream: calls.size,
    repeatsWithin32: repeats <= 32,
    sameAnswerAgain: JSON.stringify(againBody) === JSON.stringify(finished.get(ids[0]!)),
  };
  const expected = { wrongJobs: [], wrongCount: 0, jobsReachingTheUpstream: JOBS, repeatsWithin32: true, sameAnswerAgain: true };
  if (JSON.stringify(verdict) !== JSON.stringify(expected)) console.error(`[async-crash] repeats ${repeats}; the mesh's log:\n${gw.output().slice(-6_000)}`);
  expect(verdict).toEqual(expected);
}

describe("when a process of the mesh dies with 200 jobs in flight", () => {
  let gw: RunningMesh | undefined;
  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
  });

  it("then kill -9 of inference loses no job: its unacked work goes to the restarted process", async () => {
    gw = await startTestMesh(config(), { CRASH_OA: UPSTREAM_KEY });
    const { key, ids } = await jobsInFlight(gw);
    await gw.crash("inference");
    await gw.respawn("inference");
    await expectAllCompleted(gw, key, ids);
  }, 180_000);

  it("then kill -9 of jobs loses no job: the workers' events wait on JetStream for the restarted process", async () => {
    gw = await startTestMesh(config(), { CRASH_OA: UPSTREAM_KEY });
    const { key, ids } = await jobsInFlight(gw);
    await gw.crash("jobs");
    await new Promise((r) => setTimeout(r, 1_000));
    await gw.respawn("jobs");
    await expectAllCompleted(gw, key, ids);
  }, 180_000);
});

describe("when the tools process dies while research tasks run", () => {
  it("then kill -9 loses no job and starts no task twice: the polling resumes the task it named", async () => {
    const tav = await startTavilyUpstream({ apiKey: "tvly-crash", research: { minDurationMs: 4_000 } });
    const gw = await startTestMesh(
      `
providers:
  webtool: { kind: tavily, base_url: "${tav.url}", api_key_env: CRASH_TAVILY }
${testPlans}`,
      { CRASH_TAVILY: "tvly-crash", GATEWAY_RESEARCH_POLL_MS: "200" },
    );
    try {
      const { key } = await newWorkspaceKey(gw, { name: "crash-research" });
      const ids = await Promise.all(
        Array.from({ length: 5 }, async (_, i) => {
          const res = await fetch(`${gw.baseURL}/tools/webtool/research`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({ input: `crash research ${i}` }),
          });
          return ((await res.json()) as { id: string }).id;
        }),
      );
      // Every task started and is being polled: the tools process now dies mid-poll.
      await eventually(() => tav.researchTasks.size === 5 && [...tav.researchTasks.values()].every((t) => t.polls > 0), 20_000);
      await gw.crash("tools");
      await gw.respawn("tools");
      const answers = await eventually(async () => {
        const all = await Promise.all(
          ids.map(
            async (id) =>
              (await (await fetch(`${gw.baseURL}/tools/webtool/research/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Record<
                string,
                unknown
              >,
          ),
        );
        return all.every((a) => a.status === "completed") ? all : undefined;
      }, 60_000);
      for (const [i, a] of answers!.entries()) expect(a.content).toContain(`crash research ${i}`);
      expect(tav.researchTasks.size).toBe(5);
    } finally {
      await gw.stop();
      await tav.close();
    }
  }, 120_000);
});

describe.skipIf(!existsSync(NATS_BIN))("when NATS restarts with 200 jobs in flight", () => {
  let nats: ChildProcess | undefined;
  let storeDir: string;
  let gw: RunningMesh | undefined;

  afterAll(async () => {
    await gw?.stop();
    nats?.kill("SIGKILL");
    rmSync(storeDir, { recursive: true, force: true });
  });

  it("then every job still completes: work and events kept on disk, unpublished rows sent by the sweep", async () => {
    storeDir = mkdtempSync(join(tmpdir(), "gw-nats-"));
    const port = await freePort();
    nats = await startPrivateNats(port, storeDir);
    gw = await startTestMesh(config(), { CRASH_OA: UPSTREAM_KEY, NATS_URL: `nats://127.0.0.1:${port}` });
    const { key, ids } = await jobsInFlight(gw);
    await new Promise<void>((resolve) => {
      nats!.once("exit", () => resolve());
      nats!.kill("SIGKILL");
    });
    await new Promise((r) => setTimeout(r, 1_500));
    nats = await startPrivateNats(port, storeDir);
    await expectAllCompleted(gw, key, ids);
  }, 180_000);
});
