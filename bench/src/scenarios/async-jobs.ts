import { Pool } from "undici";
import { createLatencyHistogram, microsSince, summarize, type LatencySummary } from "../histogram";
import { createTimedClient, type RequestTarget } from "../http-client";
import { cpuUsers, readProcessTable } from "../neighbours";
import { readCpu } from "../process-cpu";
import { formatMs, type Table } from "../report";
import { byClients, measureAsyncFloor } from "./async-floor";
import { startDurableFloor } from "./async-durable-floor";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

/** Jobs created as fast as `CREATORS` clients can, then waited for. */
const THROUGHPUT_JOBS = 2_000;
const CREATORS = 32;
/** Between two polls of one unfinished job while the batch drains. */
const DRAIN_PAUSE_MS = 25;
/** Polls of a finished job, by `CREATORS` clients at once. */
const POLLS = 5_000;
/** Jobs created and followed to the end one at a time. */
const LATENCY_JOBS = 200;
/** How often a followed job is polled: small next to the latency it measures. */
const POLL_EVERY_MS = 2;
/** A pause before each round of the latency phase, for the previous round's work to end. */
const SETTLE_MS = 10;
/** The longest a waiting poll is held; a job here takes milliseconds. */
const WAIT_SECONDS = 8;

interface JobAnswer {
  id: string;
  status: string;
}

/**
 * Async jobs through the mesh against the zero-delay upstream: how fast jobs are created (the POST
 * writes a row and publishes to JetStream), how fast the workers finish them, and, one job at a
 * time, the time from create to a poll that sees it completed, against the same chat request
 * answered directly by the upstream. Their difference is what the job machinery adds.
 */
export const asyncJobs: Scenario = {
  name: "async",
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const gateway = ctx.chat.gateway;
    ctx.progress(`async: the floor, ${THROUGHPUT_JOBS} creates and jobs' least work through two bare stack hops by ${CREATORS} clients`);
    const floor = await measureAsyncFloor(ctx.chat.direct, CREATORS, THROUGHPUT_JOBS);
    const measured = await measureJobs(ctx, "async", { ...gateway, path: gateway.path.replace(/^\/v1\//, "/v1/async/") }, ctx.processes);
    ctx.progress("async: the durable floor (a bare hop, a row and a JetStream message each way, a worker)");
    const durableFloor = await startDurableFloor(ctx.chat.direct);
    let durable: JobsMeasured;
    try {
      durable = await measureJobs(ctx, "async durable floor", durableFloor.target, { ...durableFloor.processes, upstream: ctx.processes.upstream! });
    } finally {
      await durableFloor.stop();
    }

    const { creation, creationAlone, e2e, e2eWaiting, directSummary } = measured;
    const row = (label: string, s: LatencySummary) => [label, formatMs(s.p50), formatMs(s.p90), formatMs(s.p99)];
    const tables: Table[] = [
      {
        title: "Async jobs: throughput",
        columns: ["measure", "jobs/s"],
        rows: [
          [`created (${CREATORS} clients)`, measured.createRate.toFixed(0)],
          ["  durable floor", durable.createRate.toFixed(0)],
          ["  floor: a POST through 2 bare stack hops + Redis", floor.createsPerSecond.toFixed(0)],
          ["created and completed", measured.completeRate.toFixed(0)],
          ["  durable floor", durable.completeRate.toFixed(0)],
          ["  floor: that POST, the upstream call and a GET", floor.jobsPerSecond.toFixed(0)],
          [`polls of a finished job (${CREATORS} clients)`, measured.pollRate.toFixed(0)],
          ["  durable floor", durable.pollRate.toFixed(0)],
          ["  floor: a GET through the same hops", floor.pollsPerSecond.toFixed(0)],
        ],
      },
      {
        title: `Async jobs: CPU per job created, completed and read (µs), ${THROUGHPUT_JOBS} jobs`,
        columns: ["process", "µs/job"],
        rows: cpuRows(measured.cpuPerJob),
      },
      {
        title: `The durable floor: CPU per job created, completed and read (µs), ${THROUGHPUT_JOBS} jobs`,
        columns: ["process", "µs/job"],
        rows: cpuRows(durable.cpuPerJob),
      },
      {
        title: `Async jobs: CPU per poll of a finished job (µs), ${POLLS} polls`,
        columns: ["process", "µs/poll"],
        rows: cpuRows(measured.cpuPerPoll),
      },
      {
        title: "Async jobs: latency (ms)",
        columns: ["measure", "p50", "p90", "p99"],
        rows: [
          row(`create (${CREATORS} at once)`, creation),
          row("create, one at a time", creationAlone),
          row("create → completed, one at a time", e2e),
          row("create → completed, one waiting poll", e2eWaiting),
          row("the same call, direct", directSummary),
          added("added by the job, polling", e2e, directSummary),
          added("added by the job, waiting poll", e2eWaiting, directSummary),
          added("  durable floor: added, waiting poll", durable.e2eWaiting, durable.directSummary),
        ],
      },
    ];
    const data = {
      jobs: THROUGHPUT_JOBS,
      creators: CREATORS,
      createdPerSecond: measured.createRate,
      completedPerSecond: measured.completeRate,
      floor,
      durableFloor: {
        createdPerSecond: durable.createRate,
        completedPerSecond: durable.completeRate,
        pollsPerSecond: durable.pollRate,
        cpuMicrosPerJob: durable.cpuPerJob,
        createToCompletedWaitingMs: durable.e2eWaiting,
        directMs: durable.directSummary,
      },
      pollsPerSecond: measured.pollRate,
      cpuMicrosPerJob: measured.cpuPerJob,
      cpuMicrosPerPoll: measured.cpuPerPoll,
      createLatencyMs: creation,
      createAloneMs: creationAlone,
      createToCompletedMs: e2e,
      createToCompletedWaitingMs: e2eWaiting,
      directMs: directSummary,
      pollEveryMs: POLL_EVERY_MS,
    } as unknown as Json;
    return {
      name: "async",
      tables,
      notes: [
        "The floor rows are the same clients against two bare proxies of the fixed stack (express, http-proxy-middleware; the first makes a Redis round trip) in front of the upstream, with no Postgres, JetStream or worker: the shape every job must pass through, and a ceiling for the gateway's rates on this machine.",
        "The durable floor rows are the same clients and phases against one bare proxy with a Redis round trip in front of a bare jobs process and a bare worker (bench/src/floor/durable-floor-main.ts): each job's row written and updated in Postgres, its work and its finished event stored and acked by JetStream, and nothing else of the gateway.",
        `create → completed is measured by polling every ${POLL_EVERY_MS} ms, which adds up to that much (and more, as each poll's round trip adds to the interval), and by one poll with \`Prefer: wait=${WAIT_SECONDS}\`, answered when the job's row says completed.`,
      ],
      data,
    };
  },
};

interface JobsMeasured {
  createRate: number;
  completeRate: number;
  pollRate: number;
  cpuPerJob: Record<string, number>;
  cpuPerPoll: Record<string, number>;
  creation: LatencySummary;
  creationAlone: LatencySummary;
  e2e: LatencySummary;
  e2eWaiting: LatencySummary;
  directSummary: LatencySummary;
}

/**
 * The scenario's phases against one async API (`POST {path}` creates, `GET {path}/{id}` polls):
 * jobs created as fast as the clients can and drained, polls of a finished job, and jobs one at a
 * time against the direct call. The CPU of `processes` and of Postgres, NATS and Redis per item.
 */
async function measureJobs(ctx: BenchContext, label: string, create: RequestTarget, processes: Record<string, number>): Promise<JobsMeasured> {
  const pool = new Pool(create.origin, { connections: CREATORS, pipelining: 1, keepAliveTimeout: 60_000 });
  const post = async (): Promise<JobAnswer> => {
    const res = await pool.request({ method: "POST", path: create.path, headers: create.headers, body: create.body });
    const text = await res.body.text();
    if (res.statusCode !== 202) throw new Error(`${label}: creating a job answered ${res.statusCode}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as JobAnswer;
  };
  const poll = async (id: string, prefer?: string): Promise<JobAnswer> => {
    const headers: Record<string, string> = {
      ...(create.headers.authorization ? { authorization: create.headers.authorization } : {}),
      ...(prefer ? { prefer } : {}),
    };
    const res = await pool.request({ method: "GET", path: `${create.path}/${id}`, headers });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${label}: polling ${id} answered ${res.statusCode}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as JobAnswer;
  };
  const finish = async (id: string, pauseMs = POLL_EVERY_MS): Promise<void> => {
    for (;;) {
      const job = await poll(id);
      if (job.status === "completed") return;
      if (job.status === "failed") throw new Error(`${label}: job ${id} failed: ${JSON.stringify(job)}`);
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  };

  try {
    ctx.progress(`${label}: warm-up, 50 jobs`);
    for (let i = 0; i < 50; i++) await finish((await post()).id);

    ctx.progress(`${label}: ${THROUGHPUT_JOBS} jobs created by ${CREATORS} clients at once`);
    const createLatency = createLatencyHistogram();
    const ids: string[] = [];
    const cpuBefore = readCpu(processes);
    const tableBefore = readProcessTable();
    const started = process.hrtime.bigint();
    await byClients(CREATORS, THROUGHPUT_JOBS, async () => {
      const t = process.hrtime.bigint();
      ids.push((await post()).id);
      createLatency.recordValue(microsSince(t));
    });
    const createdMs = Number(process.hrtime.bigint() - started) / 1e6;
    // Drained: every job of the batch completed, checked by as many clients as created them (one
    // checker walking 2,000 jobs would measure its own round trips, not the workers), in creation
    // order and unhurried, so most jobs are read once, done, as a client reads its result.
    const unchecked = ids.slice();
    await Promise.all(
      Array.from({ length: CREATORS }, async () => {
        for (let id = unchecked.shift(); id !== undefined; id = unchecked.shift()) await finish(id, DRAIN_PAUSE_MS);
      }),
    );
    const drainedMs = Number(process.hrtime.bigint() - started) / 1e6;
    // CPU per job, created and completed: every process given, and Postgres, NATS and Redis.
    const cpuPerJob = cpuPerItem(processes, cpuBefore, tableBefore, drainedMs, THROUGHPUT_JOBS);

    ctx.progress(`${label}: ${POLLS} polls of a finished job by ${CREATORS} clients at once`);
    const pollCpuBefore = readCpu(processes);
    const pollTableBefore = readProcessTable();
    const pollsStarted = process.hrtime.bigint();
    const done = ids[0]!;
    await byClients(CREATORS, POLLS, async () => void (await poll(done)));
    const pollsMs = Number(process.hrtime.bigint() - pollsStarted) / 1e6;
    const cpuPerPoll = cpuPerItem(processes, pollCpuBefore, pollTableBefore, pollsMs, POLLS);

    ctx.progress(`${label}: ${LATENCY_JOBS} jobs one at a time, create to completed, against the direct call`);
    const direct = createTimedClient(ctx.chat.direct, 1);
    const endToEnd = createLatencyHistogram();
    const endToEndWaiting = createLatencyHistogram();
    const createAlone = createLatencyHistogram();
    const directLatency = createLatencyHistogram();
    try {
      for (let i = 0; i < LATENCY_JOBS; i++) {
        // The previous job's work after its finish (its usage record, its settlement) is done
        // first: the direct call is measured on an idle mesh, as each job starts on one.
        await new Promise((r) => setTimeout(r, SETTLE_MS));
        directLatency.recordValue(await direct.timed());
        const t = process.hrtime.bigint();
        const { id } = await post();
        createAlone.recordValue(microsSince(t));
        await finish(id);
        endToEnd.recordValue(microsSince(t));
        // The same, with one poll that waits for the finish (Prefer: wait): no polling interval in it.
        const w = process.hrtime.bigint();
        const waited = await poll((await post()).id, `wait=${WAIT_SECONDS}`);
        if (waited.status !== "completed") throw new Error(`${label}: a waiting poll answered ${JSON.stringify(waited)}`);
        endToEndWaiting.recordValue(microsSince(w));
      }
    } finally {
      await direct.close();
    }
    return {
      createRate: (THROUGHPUT_JOBS / createdMs) * 1000,
      completeRate: (THROUGHPUT_JOBS / drainedMs) * 1000,
      pollRate: (POLLS / pollsMs) * 1000,
      cpuPerJob,
      cpuPerPoll,
      creation: summarize(createLatency),
      creationAlone: summarize(createAlone),
      e2e: summarize(endToEnd),
      e2eWaiting: summarize(endToEndWaiting),
      directSummary: summarize(directLatency),
    };
  } finally {
    await pool.close();
  }
}

/** One latency row minus the direct call's, percentile by percentile. */
function added(label: string, measured: LatencySummary, direct: LatencySummary): string[] {
  return [label, formatMs(measured.p50 - direct.p50, true), formatMs(measured.p90 - direct.p90, true), formatMs(measured.p99 - direct.p99, true)];
}

/** CPU each process (Postgres, NATS and Redis included) spent per item over a phase of `ms`. */
function cpuPerItem(
  processes: Record<string, number>,
  before: Record<string, number>,
  tableBefore: ReturnType<typeof readProcessTable>,
  ms: number,
  items: number,
): Record<string, number> {
  const perItem: Record<string, number> = {};
  for (const [name, micros] of Object.entries(readCpu(processes))) perItem[name] = Math.round((micros - (before[name] ?? 0)) / items);
  for (const user of cpuUsers(tableBefore, readProcessTable(), ms, process.pid).infrastructure) {
    perItem[user.name] = (perItem[user.name] ?? 0) + Math.round((user.core * ms * 1000) / items);
  }
  return perItem;
}

/** Busiest first, and their sum. */
function cpuRows(perItem: Record<string, number>): string[][] {
  return [
    ...Object.entries(perItem)
      .filter(([, micros]) => micros > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([name, micros]) => [name, String(micros)]),
    ["all", String(Object.values(perItem).reduce((a, b) => a + b, 0))],
  ];
}
