import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import type { JobEvent, JobWork } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { createLogger } from "@gw/logger";
import { credentialsTransitPurpose, Sealer, type CallSignal } from "@gw/service-kit";
import { startJobWorker } from "./job-worker";
import type { RouteContext, RouteHandler, RouteHandlers } from "./routes/route-handler";

/**
 * The job worker runs a job through its route's own handler, in this process: what the handler is
 * given, and how each kind of answer becomes the job's events.
 */
const SECRET = "s".repeat(32);
/** No job here needs the jobs service (nothing too large for the bus). */
const jobsUrl = "http://127.0.0.1:1";
const logger = createLogger({ service: "t", level: "silent" });
let n = 0;
const work = (route: string, extra: Partial<JobWork> = {}): JobWork => ({
  job_id: `job_${String(++n).padStart(8, "0")}`,
  route,
  identity: { workspace_id: "ws_w", key_id: "key_w", plan: "pro", models: [["*"]], tools: [] },
  request: { format: "json", body: { model: "m", input: "x" } },
  attempt: 1,
  request_id: "req_job",
  ...extra,
});

let bus: Bus;
let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  await bus?.close();
});

/** Runs the jobs; resolves once `finals` of them have finished (or the worker has stopped, for none). */
async function run(
  handlers: Record<string, RouteHandler>,
  jobs: JobWork[],
  finals = jobs.length,
  options: { jobsUrl?: string; largeRequestBytes?: number } = {},
): Promise<JobEvent[]> {
  bus = createInProcessBus({ logger });
  const events: JobEvent[] = [];
  await bus.consume("jobs.events", { durable: "jobs" }, async (event) => void events.push(event));
  const worker = await startJobWorker({
    bus,
    handlers: new Map(Object.entries(handlers)) as RouteHandlers,
    internalSecret: SECRET,
    logger,
    concurrency: 4,
    jobsUrl: () => options.jobsUrl ?? jobsUrl,
    largeRequestBytes: options.largeRequestBytes ?? 32 * 1024 * 1024,
  });
  stop = () => worker.stop();
  for (const job of jobs) await bus.enqueue("jobs.work.inference", job, { msgId: `${job.job_id}:${job.attempt}` });
  const deadline = Date.now() + 5_000;
  const finished = () => events.filter((e) => e.status === "completed" || e.status === "failed").length;
  while (finished() < finals && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  return events;
}

describe("when the inference worker runs a job", () => {
  it("then the route's handler gets the job's body, identity, request id and opened credentials, and its JSON answer is the result", async () => {
    const seen: { body: unknown; ctx: RouteContext }[] = [];
    const sealed = new Sealer(SECRET, credentialsTransitPurpose).seal(JSON.stringify({ oa: "sk-own" }), "ws_w");
    const events = await run(
      {
        "/v1/embeddings": async (input, ctx) => {
          seen.push({ body: input.body, ctx });
          ctx.meter.attemptStart("oa", "text-embedding-3-small");
          ctx.meter.tokens({ input_tokens: 7 });
          return { kind: "json", body: { object: "list", data: [] }, totalTokens: 7 };
        },
      },
      [work("embeddings", { credentials: sealed })],
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]?.body).toEqual({ model: "m", input: "x" });
    expect(seen[0]?.ctx).toMatchObject({ identity: { workspace_id: "ws_w", key_id: "key_w" }, requestId: "req_job", credentials: { oa: "sk-own" } });
    // Done within a moment: queued straight to completed, with no running status in between.
    expect(events.map((e) => e.status)).toEqual(["completed"]);
    expect(events[0]).toMatchObject({
      result: { object: "list", data: [] },
      usage_tokens: 7,
      status_code: 200,
      outcome: { provider: "oa", upstream_model: "text-embedding-3-small", attempts: 1, usage: { input_tokens: 7 } },
    });
  });

  it("then bytes become base64 with their type, a multipart job arrives as its raw form, and a refusal fails the job in the route's envelope", async () => {
    const forms: unknown[] = [];
    const events = await run(
      {
        "/v1/audio/speech": async () => ({ kind: "bytes", contentType: "audio/mpeg", body: Readable.from([Buffer.from("ID3"), Buffer.from([0, 255])]) }),
        "/v1/audio/transcriptions": async (input) => {
          forms.push([input.contentType, Buffer.isBuffer(input.body) ? input.body.toString() : input.body]);
          return { kind: "text", contentType: "text/plain", text: "hello" };
        },
        "/v1/messages": async () => {
          throw new GatewayError("invalid_request", "Invalid body: messages is required");
        },
      },
      [
        work("audio/speech"),
        work("audio/transcriptions", {
          request: { format: "multipart", content_type: "multipart/form-data; boundary=x", base64: Buffer.from("--x--").toString("base64") },
        }),
        work("messages"),
        work("no/such/route"),
      ],
    );
    const finals = events.filter((e) => e.status !== "processing");
    expect(finals).toHaveLength(4);
    const [speech, transcription, messages, unknown] = finals.sort((a, b) => a.job_id.localeCompare(b.job_id));
    expect(speech).toMatchObject({
      status: "completed",
      result: { object: "binary", content_type: "audio/mpeg", data: Buffer.from([0x49, 0x44, 0x33, 0, 255]).toString("base64") },
    });
    expect(forms).toEqual([["multipart/form-data; boundary=x", "--x--"]]);
    expect(transcription).toMatchObject({ status: "completed", result: "hello" });
    // The messages route's envelope is Anthropic's.
    expect(messages).toMatchObject({ status: "failed", status_code: 400, error: { type: "error", error: { type: "invalid_request_error" } } });
    expect(unknown).toMatchObject({ status: "failed", status_code: 404 });
  });

  it("then a superseded attempt's handler is aborted and reports nothing more", async () => {
    let signal: CallSignal | undefined;
    const job = work("embeddings");
    const handlers: Record<string, RouteHandler> = {
      "/v1/embeddings": (_input, ctx) =>
        new Promise((resolve) => {
          signal = ctx.signal;
          (ctx.signal as AbortSignal).addEventListener("abort", () => resolve({ kind: "error", error: new GatewayError("upstream_error", "aborted") }));
        }),
    };
    const events = await run(handlers, [job], 0);
    // Still running a moment later, it is reported processing; then it is superseded.
    const deadline = Date.now() + 5_000;
    while (!events.some((e) => e.status === "processing") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(signal).toBeDefined();
    await bus.publish("jobs.cancel", { job_id: job.job_id, attempt: 1 });
    while (!signal?.aborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(signal?.aborted).toBe(true);
    // Stopping waits for the running handler and its reports: none after `processing`.
    await stop?.();
    stop = undefined;
    expect(events.map((e) => e.status)).toEqual(["processing"]);
  });
});

describe("when jobs whose requests were too large for the bus arrive together", () => {
  it("then they are read from the jobs service and run one body limit at a time", async () => {
    const fetched: string[] = [];
    const server = createServer((req, res) => {
      fetched.push(req.url ?? "");
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ format: "json", body: { model: "m", input: "stored" } }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      let releaseFirst!: () => void;
      const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
      const started: unknown[] = [];
      const stored = { format: "stored" as const, bytes: 800 };
      const jobs = [work("embeddings", { request: stored }), work("embeddings", { request: stored })];
      const events = run(
        {
          "/v1/embeddings": async (input) => {
            started.push(input.body);
            if (started.length === 1) await firstHeld;
            return { kind: "json", body: { object: "list", data: [] } };
          },
        },
        jobs,
        2,
        { jobsUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, largeRequestBytes: 1_000 },
      );
      const deadline = Date.now() + 5_000;
      while (started.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      // The second's 800 bytes do not fit beside the first's: it is not even read while the first runs.
      await new Promise((r) => setTimeout(r, 200));
      const readWhileFirstRan = fetched.length;
      // Let go before asserting: a held handler would keep the worker from stopping.
      releaseFirst();
      expect(readWhileFirstRan).toBe(1);
      // Either may also have been reported `processing`: the first is held past the report's delay on a slow machine.
      expect((await events).map((e) => e.status).filter((s) => s !== "processing")).toEqual(["completed", "completed"]);
      expect(fetched.sort()).toEqual(jobs.map((j) => `/v1/jobs/${j.job_id}/request`).sort());
      expect(started).toEqual([
        { model: "m", input: "stored" },
        { model: "m", input: "stored" },
      ]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
