import { createHash, randomBytes } from "node:crypto";
import express, { type Express, type Request, type Response } from "express";
import {
  AsyncJob,
  finishedJobStatuses,
  idempotencyKeyHeader,
  internalHeaders,
  MAX_BODY_RETENTION_DAYS,
  TokenTicket,
  WebtoolResearchRequest,
  type Identity,
  type JobRequest,
} from "@gw/contracts";
import type { Bus } from "@gw/bus";
import { fromZodError, GatewayError } from "@gw/errors";
import { jsonBody, readTranscriptionForm, refuseCredentials, routeLabel, writeOrWait, type Catalog, type UploadGate } from "@gw/service-kit";
import { asyncModelRoutes, researchRoute, type AsyncModelRoute } from "./async-routes";
import type { Dispatcher } from "./dispatcher";
import { preferredWaitSeconds, type FinishWaiters } from "./finish-waiters";
import { gateLargeAnswers, gateLargeBodies } from "./upload-gate";
import type { JobCredentials } from "./job-credentials";
import type { JobRow, JobStore, NewJob, PolledJob } from "./job-store";

export interface JobRoutesDeps {
  store: JobStore;
  /** Seals a workspace's own provider credentials at rest; refuses them without a master key. */
  credentials: JobCredentials;
  bus: Bus;
  dispatcher: Dispatcher;
  /** Polls that wait for their job to finish (`Prefer: wait=N`). */
  waiters: FinishWaiters;
  /** Large bodies stored at once (uploads), so that a few cannot run the process out of memory. */
  uploads: UploadGate;
  catalog: Catalog;
  /** Largest request body, as for the regular routes (express's `limit` syntax). */
  bodyLimit: string;
  /** The largest work message the bus carries; a research job whose request would not fit is refused. */
  maxMessageBytes(): number;
  /** The largest result a worker may hand over out of band. */
  resultLimitBytes: number;
}

/** A stored result goes out in slices of this size, so a poll never holds all of it. */
const RESULT_SLICE_BYTES = 1024 * 1024;

const rawBody = (limit: string) => express.raw({ limit, type: () => true });

/**
 * `POST /v1/async/<route>` and `GET /v1/async/<route>/{job_id}` for every model route, and research:
 * `POST /v1/tools/webtool/research` and `GET /v1/tools/webtool/research/{job_id}`.
 */
export function mountJobRoutes(app: Express, deps: JobRoutesDeps): void {
  const json = jsonBody(deps.bodyLimit);
  const raw = rawBody(deps.bodyLimit);

  app.post(
    "/v1/async/*route",
    routeLabel("/v1/async"),
    gateLargeBodies(deps.uploads),
    (req, res, next) => {
      const spec = asyncModelRoutes[asyncRouteOf(req)];
      if (!spec) return next(unknownAsyncRoute(req));
      (spec.schema ? json : raw)(req, res, next);
    },
    async (req, res) => {
      const route = asyncRouteOf(req);
      const spec = asyncModelRoutes[route]!;
      const identity = res.locals.identity as Identity;
      const { request, hashInput } = await readAsyncRequest(req, spec, identity, deps.catalog);
      const outcome = await create(deps, req, route, request, hashInput);
      res.status(202).json({ id: outcome.id, status: outcome.status, created_at: unixSeconds(outcome.created_at) });
    },
  );

  app.get("/v1/async/*route", routeLabel("/v1/async"), async (req, res) => {
    const segments = asyncRouteOf(req).split("/");
    const id = segments.pop() ?? "";
    const route = segments.join("/");
    if (!asyncModelRoutes[route] || !id.startsWith("job_")) throw unknownAsyncRoute(req);
    const workspaceId = (res.locals.identity as Identity).workspace_id;
    const job = await pollWaiting(req, res, deps.waiters, id, workspaceId, () => deps.store.poll(id, route, workspaceId));
    if (res.closed) return;
    if (!job) throw jobNotFound(id);
    setPollHeader(res, job);
    const answer = AsyncJob.parse(asyncAnswer(job));
    if (job.result_bytes === null) {
      res.json(answer);
      return;
    }
    await sendStoredResult(res, deps.store, job, answer);
  });

  // The workers' side (signed with the job's identity, as every /v1 call here is): the request a
  // work message could not carry, and a result too large for the finished event.
  app.get("/v1/jobs/:jobId/request", routeLabel("/v1/jobs/request"), gateLargeAnswers(deps.uploads), async (req, res) => {
    const text = await deps.store.requestText(String(req.params.jobId), (res.locals.identity as Identity).workspace_id);
    if (text === undefined) throw jobNotFound(String(req.params.jobId));
    res.type("application/json").send(text);
  });

  app.put("/v1/jobs/:jobId/result", routeLabel("/v1/jobs/result"), express.raw({ limit: deps.resultLimitBytes, type: () => true }), async (req, res) => {
    const attempt = Number(req.query.attempt);
    if (!Number.isInteger(attempt) || attempt < 1) throw new GatewayError("invalid_request", "attempt must be a positive integer", { param: "attempt" });
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const kept = await deps.store.storeResult(String(req.params.jobId), attempt, (res.locals.identity as Identity).workspace_id, body);
    // Not this workspace's, finished, or superseded: the worker reports nothing more for it.
    if (!kept) throw new GatewayError("conflict", "This job no longer takes a result from this attempt");
    res.status(204).end();
  });

  app.post("/v1/tools/webtool/research", routeLabel("/v1/tools/webtool/research"), json, async (req, res) => {
    // As on every tool route: the gateway adds its own provider credential, the caller's is refused.
    refuseCredentials(req.query, "query");
    refuseCredentials(req.body, "body");
    const parsed = WebtoolResearchRequest.safeParse(req.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request: JobRequest = { format: "json", body: parsed.data };
    const job = await create(deps, req, researchRoute, request, JSON.stringify(req.body));
    // Tavily's queued-task shape, with our job id as its request id (200: tavily-python accepts no other 2xx).
    res.json({
      id: job.id,
      request_id: job.id,
      created_at: job.created_at.toISOString(),
      status: researchStatus(job.status),
      input: parsed.data.input,
      model: parsed.data.model ?? "auto",
      response_time: responseTime(job),
    });
  });

  app.get("/v1/tools/webtool/research/:jobId", routeLabel("/v1/tools/webtool/research"), async (req, res) => {
    const identity = res.locals.identity as Identity;
    const id = String(req.params.jobId);
    // Bound to the key that created it: another key, even of the same workspace, gets the same 404.
    const job = await pollWaiting(req, res, deps.waiters, id, identity.workspace_id, () =>
      deps.store.poll(id, researchRoute, identity.workspace_id, identity.key_id),
    );
    if (res.closed) return;
    if (!job) throw jobNotFound(id);
    setPollHeader(res, job);
    const answer = researchAnswer(job);
    res.status(finishedJobStatuses.includes(job.status) ? 200 : 202).json(answer);
  });
}

/**
 * A poll's job, read once; with `Prefer: wait=N`, a job not yet finished is read again when it
 * finishes, after N seconds, or not at all if the client has gone. Registered before the first read,
 * so a finish applied in between still wakes it.
 */
async function pollWaiting(
  req: Request,
  res: Response,
  waiters: FinishWaiters,
  id: string,
  workspaceId: string,
  read: () => Promise<PolledJob | undefined>,
): Promise<PolledJob | undefined> {
  const seconds = preferredWaitSeconds(req.get("prefer"));
  const wait = seconds > 0 ? waiters.register(id, workspaceId) : undefined;
  if (!wait) return read();
  const gone = () => wait.end();
  res.once("close", gone);
  try {
    const job = await read();
    if (!job || res.closed) return job;
    res.setHeader("preference-applied", `wait=${seconds}`);
    if (finishedJobStatuses.includes(job.status)) return job;
    await wait.until(seconds * 1000);
    return res.closed ? job : read();
  } finally {
    res.off("close", gone);
    wait.end();
  }
}

/**
 * A finished job whose result is stored apart: the answer's JSON with the result's JSON text spliced
 * in, read from Postgres a slice at a time and written as the client takes it.
 */
async function sendStoredResult(res: Response, store: JobStore, job: PolledJob, answer: AsyncJob): Promise<void> {
  const total = job.result_bytes ?? 0;
  const head = JSON.stringify(answer);
  const prefix = `${head.slice(0, -1)},"result":`;
  res.status(200).type("application/json");
  res.setHeader("content-length", String(Buffer.byteLength(prefix) + total + 1));
  await writeOrWait(res, prefix);
  for (let from = 0; from < total && !res.destroyed; from += RESULT_SLICE_BYTES) {
    await writeOrWait(res, await store.resultSlice(job.id, job.attempts, from, Math.min(RESULT_SLICE_BYTES, total - from)));
  }
  res.end("}");
}

function asyncRouteOf(req: Request): string {
  return req.path.replace(/^\/v1\/async\//, "").replace(/\/+$/, "");
}

function unknownAsyncRoute(req: Request): GatewayError {
  return new GatewayError(
    "not_found",
    `There is no async route at ${req.path}. Async routes are /v1/async/<route> for: ${Object.keys(asyncModelRoutes).join(", ")}`,
  );
}

function jobNotFound(id: string): GatewayError {
  return new GatewayError("not_found", `No job found with id ${id}`, { param: "job_id" });
}

/**
 * A transcription form checked as its regular route checks it, and what identifies it for
 * idempotency: a resent form has a new boundary, so its identity is its entries, files by their
 * digest (read a chunk at a time, never copied whole again).
 */
async function checkedFormIdentity(
  contentType: string | undefined,
  body: Buffer,
  identity: Identity,
  catalog: Catalog,
  spec: AsyncModelRoute,
): Promise<string> {
  const upload = await readTranscriptionForm(contentType, body);
  if (upload.form.stream === "true") throw streamRefused();
  catalog.resolve(identity, upload.form.model, spec.modelType);
  const entries = await Promise.all(
    upload.entries.map(async ([name, value]) => {
      if (typeof value === "string") return [name, value];
      const hash = createHash("sha256");
      for await (const chunk of value.stream()) hash.update(chunk);
      return [name, value.type, hash.digest("hex")];
    }),
  );
  return JSON.stringify(entries);
}

/**
 * The body, checked exactly as the regular route checks it (schema, model access and type), minus
 * streaming: a job's result is the whole answer. Also what identifies the request for idempotency.
 */
async function readAsyncRequest(
  req: Request,
  spec: AsyncModelRoute,
  identity: Identity,
  catalog: Catalog,
): Promise<{ request: JobRequest; hashInput: string }> {
  if (!spec.schema) {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    // The parsed form (a copy of the upload) is let go before the body is encoded for the row.
    const hashInput = await checkedFormIdentity(req.get("content-type"), body, identity, catalog, spec);
    return { request: { format: "multipart", content_type: req.get("content-type")!, base64: body.toString("base64") }, hashInput };
  }
  const parsed = spec.schema.safeParse(req.body);
  if (!parsed.success) throw fromZodError(parsed.error);
  if (parsed.data.stream === true) throw streamRefused();
  if (parsed.data.stream_format === "sse")
    throw new GatewayError("invalid_request", "stream_format sse is not supported on async routes; the job's result is the whole audio", {
      param: "stream_format",
    });
  catalog.resolve(identity, parsed.data.model, spec.modelType);
  return { request: { format: "json", body: req.body }, hashInput: JSON.stringify(req.body) };
}

function streamRefused(): GatewayError {
  return new GatewayError(
    "invalid_request",
    "stream: true is not supported on async routes; poll the job for its whole result, or call the regular route to stream",
    { param: "stream" },
  );
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** Writes the job (or finds the one this idempotency key made), then publishes its work. */
async function create(deps: JobRoutesDeps, req: Request, route: string, request: JobRequest, hashInput: string): Promise<JobRow> {
  const res = req.res as Response;
  const identity = res.locals.identity as Identity;
  // The workspace's own provider credentials, as requireIdentity opened them from x-gw-credentials.
  const own = res.locals.credentials as Record<string, string> | undefined;
  const idempotencyKey = req.get(idempotencyKeyHeader);
  if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
    throw new GatewayError("invalid_request", "Idempotency-Key must be 1 to 255 printable ASCII characters", { param: idempotencyKeyHeader });
  }
  const job: NewJob = {
    id: `job_${randomBytes(16).toString("hex")}`,
    route,
    identity,
    // Sealed at rest (or the job refused, nothing stored) before the row exists.
    credentials: own ? deps.credentials.seal(identity.workspace_id, own) : undefined,
    request,
    requestId: res.locals.requestId as string | undefined,
    idempotencyKey,
    requestHash: createHash("sha256").update(hashInput).digest("hex"),
    tokenTicket: tokenTicketOf(req, identity),
    captureDays: captureDaysOf(req),
  };
  // A model job's request too large for its work message is read by the worker from this service;
  // research has no such path (its bodies are small), so one the bus cannot carry is refused now.
  const credentials = req.get(internalHeaders.credentials);
  const messageBytes = route === researchRoute ? Buffer.byteLength(JSON.stringify({ job_id: job.id, route, identity, credentials, request })) + 512 : 0;
  if (messageBytes > deps.maxMessageBytes()) {
    throw new GatewayError(
      "body_too_large",
      `This async request is ${messageBytes} bytes; async requests can be at most ${deps.maxMessageBytes() - 512}. Send large inputs by URL, or call the regular route.`,
    );
  }
  const outcome = await deps.store.create(job);
  if (outcome.kind === "conflict") {
    throw new GatewayError("conflict", "This Idempotency-Key was already used with a different request; use a new key for a new request", {
      param: idempotencyKeyHeader,
    });
  }
  if (outcome.kind === "replayed") {
    res.setHeader("idempotent-replayed", "true");
    // The replay runs nothing, so what ingress reserved for it is given back at once.
    if (job.tokenTicket) {
      await deps.bus.enqueue("limits.settle", { job_id: outcome.job.id, ticket: job.tokenTicket, used: 0 }, { msgId: `${outcome.job.id}:replay:${job.id}` });
    }
    return outcome.job;
  }
  // The row is durable, so the answer need not wait for the bus: the publish goes on in the
  // background, and if it fails (or this process dies first) the sweep publishes the row.
  deps.dispatcher.dispatchSoon(outcome.job);
  // This request's usage record is the job's, published when the job finishes (see service.ts).
  res.setHeader(internalHeaders.recordDeferred, outcome.job.id);
  return outcome.job;
}

/** Days to keep the job's bodies, when ingress says its workspace keeps detailed logs. */
function captureDaysOf(req: Request): number | undefined {
  const days = Number(req.get(internalHeaders.captureDays));
  return Number.isInteger(days) && days >= 1 && days <= MAX_BODY_RETENTION_DAYS ? days : undefined;
}

/** Ingress's token reservation for this call, if it made one (and it is this caller's). */
function tokenTicketOf(req: Request, identity: Identity): TokenTicket | undefined {
  const header = req.get(internalHeaders.tokenTicket);
  if (!header) return undefined;
  let parsed: ReturnType<typeof TokenTicket.safeParse>;
  try {
    parsed = TokenTicket.safeParse(JSON.parse(header));
  } catch {
    return undefined;
  }
  return parsed.success && parsed.data.workspace_id === identity.workspace_id && parsed.data.key_id === identity.key_id ? parsed.data : undefined;
}

function unixSeconds(date: Date | null): number | undefined {
  return date ? Math.floor(date.getTime() / 1000) : undefined;
}

function asyncAnswer(job: PolledJob): AsyncJob {
  return {
    id: job.id,
    status: job.status,
    created_at: unixSeconds(job.created_at)!,
    ...(job.completed_at ? { completed_at: unixSeconds(job.completed_at) } : {}),
    ...(job.result != null ? { result: job.result } : {}),
    ...(job.error != null ? { error: job.error } : {}),
  };
}

/**
 * The spec asks clients to poll every few seconds, longer for long jobs: 2 s for a new job, growing
 * by a second for every 10 s of age, up to 30 s. Finished jobs carry none.
 */
export function pollDelaySeconds(ageMs: number): number {
  return Math.min(30, Math.max(2, Math.ceil(ageMs / 10_000)));
}

function setPollHeader(res: Response, job: PolledJob): void {
  if (finishedJobStatuses.includes(job.status)) return;
  res.setHeader("retry-after", String(pollDelaySeconds(Date.now() - job.created_at.getTime())));
}

/** Our statuses in Tavily's words; an upstream's own running status passes through. */
function researchStatus(status: string): string {
  if (status === "queued") return "pending";
  if (status === "processing") return "in_progress";
  return status;
}

/** Whole seconds: Tavily's schema types `response_time` as an integer, which any client can read. */
function responseTime(job: PolledJob): number {
  const end = job.completed_at ?? new Date();
  return Math.round((end.getTime() - job.created_at.getTime()) / 1000);
}

/** Tavily's research shape, with our job id in both `id` and `request_id`. */
function researchAnswer(job: PolledJob): Record<string, unknown> {
  const ids = { id: job.id, request_id: job.id };
  const status = researchStatus(job.status);
  if (status === "completed") {
    const result = (job.result ?? {}) as Record<string, unknown>;
    return { ...result, ...ids, created_at: job.created_at.toISOString(), status, response_time: responseTime(job) };
  }
  if (status === "failed") return { ...ids, status, response_time: responseTime(job), ...(job.error != null ? { error: job.error } : {}) };
  return { ...ids, status, response_time: responseTime(job) };
}
