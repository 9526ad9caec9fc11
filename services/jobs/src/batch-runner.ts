import { randomBytes } from "node:crypto";
import type { Bus } from "@gw/bus";
import {
  type AdmissionAnswer,
  type AdmissionRequest,
  type BatchError,
  type BatchEndpoint,
  BatchRequestInput,
  DEFAULT_FILE_EXPIRY_SECONDS,
  type Identity,
  type TokenTicket,
} from "@gw/contracts";
import { fromZodError, GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { errorFormatFor, type Catalog } from "@gw/service-kit";
import { asyncModelRoutes } from "./async-routes";
import { BATCH_LEASE_MS, type BatchLine, type BatchRow, type BatchStore, type RefusedLine, routeOf } from "./batch-store";
import type { Dispatcher } from "./dispatcher";
import type { FileStore } from "./file-store";
import type { JobCredentials, StoredCredentials } from "./job-credentials";
import type { JobRow, JobStore, NewJob } from "./job-store";

/** Asks ingress to admit a batch's lines under its key's limits and budgets. */
export type Admit = (request: AdmissionRequest) => Promise<AdmissionAnswer>;

export interface BatchRunnerDeps {
  batches: BatchStore;
  files: FileStore;
  jobs: JobStore;
  dispatcher: Dispatcher;
  catalog: Catalog;
  credentials: JobCredentials;
  admit: Admit;
  bus: Bus;
  logger: Logger;
  /** A batch's lines running at once, at most: one batch never floods the workers' queue. */
  maxInFlight?: number;
  /** How often the runner looks for batches with work due. */
  intervalMs?: number;
}

/** OpenAI's own bound on a batch. */
export const MAX_BATCH_LINES = 50_000;
/** Validation names this many bad lines at most; the rest are counted in the last message. */
const MAX_REPORTED_ERRORS = 100;
/** Lines asked of ingress in one call. */
const ADMISSION_GROUP = 64;
/** Lines a step takes from the input at most. */
const STEP_LINES = 256;
/** How soon a batch with lines running is looked at again. */
const RUNNING_RECHECK_MS = 500;
/** The shortest wait for the limits to have room. */
const MIN_WAIT_MS = 100;
/** How often expired files and finished batches past their files' lifetime are removed. */
const CLEANUP_EVERY_MS = 60_000;
/** Claims in one tick at most, so that the cleanup and a stop are never kept waiting long. */
const MAX_STEPS_PER_TICK = 50;
/** How long a batch whose step failed waits before it is tried again. */
const FAILED_STEP_WAIT_MS = 2_000;

/**
 * Moves batches along: validates an input file into lines, admits lines (in order, at the pace the
 * key's limits allow, as ingress says) as jobs of the jobs table and dispatches them, and once every
 * line has finished writes the output and error files. Each step starts from what Postgres holds,
 * so a crash anywhere leaves a batch that the next step (here or in another replica) picks up.
 */
export class BatchRunner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private started = false;
  private stopping = false;
  /** Kicked while a round ran: the next one starts at once. */
  private again = false;
  private lastCleanup = 0;
  private readonly maxInFlight: number;
  private readonly intervalMs: number;

  constructor(private readonly deps: BatchRunnerDeps) {
    this.maxInFlight = deps.maxInFlight ?? 1_000;
    this.intervalMs = deps.intervalMs ?? 250;
  }

  start(): void {
    this.started = true;
    this.schedule(0);
  }

  /** A batch has work now (created, cancelled): the next round starts without waiting. */
  kick(): void {
    if (this.started) this.schedule(0);
  }

  async stop(): Promise<void> {
    this.started = false;
    this.stopping = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.round(), delayMs);
  }

  private round(): void {
    if (!this.started) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.tick()
      .catch((err: unknown) => this.deps.logger.warn({ err }, "batches: runner failed; trying again"))
      .finally(() => {
        this.running = undefined;
        if (this.started) this.schedule(this.again ? 0 : this.intervalMs);
        this.again = false;
      });
  }

  /** One round: every batch with work due, a step each; now and then, expired files and old batches go. */
  async tick(): Promise<void> {
    if (Date.now() - this.lastCleanup > CLEANUP_EVERY_MS) {
      this.lastCleanup = Date.now();
      const files = await this.deps.files.removeExpired(1_000);
      const batches = await this.deps.batches.removeFinished(DEFAULT_FILE_EXPIRY_SECONDS, 1_000);
      if (files + batches > 0) this.deps.logger.info({ files, batches }, "batches: expired files and old batches removed");
    }
    // Rounds end when nothing is due, or when the runner stops (a step under way finishes first).
    for (let rounds = 0; rounds < MAX_STEPS_PER_TICK; rounds++) {
      const batches = await this.deps.batches.claim(4);
      if (batches.length === 0) return;
      await Promise.all(batches.map((batch) => this.run(batch)));
      if (this.stopping) return;
    }
  }

  /** One step of a claimed batch, its lease renewed while the step runs, then the batch given back. */
  private async run(batch: BatchRow): Promise<void> {
    let wakeInMs = FAILED_STEP_WAIT_MS;
    const renewal = setInterval(() => {
      this.deps.batches.renew(batch).catch((err: unknown) => this.deps.logger.warn({ err, batch: batch.id }, "batches: a lease could not be renewed"));
    }, BATCH_LEASE_MS / 3);
    try {
      wakeInMs = Math.max(await this.step(batch), 0);
    } catch (err) {
      this.deps.logger.warn({ err, batch: batch.id, status: batch.status }, "batches: a step failed; trying again");
    } finally {
      clearInterval(renewal);
    }
    await this.deps.batches.release(batch, wakeInMs);
  }

  /** Moves the batch on by one step; answers how soon it has more to do. */
  private async step(batch: BatchRow): Promise<number> {
    const { batches } = this.deps;
    const expired = batch.expires_at.getTime() <= Date.now();
    if (batch.status === "validating") {
      if (expired)
        await batches.failValidation(batch, [{ code: "batch_expired", message: "The input file was not validated within the completion window.", line: null }]);
      else await this.validate(batch);
      return 0;
    }
    if (batch.status === "finalizing") {
      await batches.finalize(batch, "completed");
      return 0;
    }
    const open = await batches.openLines(batch.id);
    if (batch.status === "cancelling") {
      if (open === 0) await batches.finalize(batch, "cancelled");
      return RUNNING_RECHECK_MS;
    }
    // In progress: past its window no more lines start, and it expires once those running end.
    if (!expired) {
      const room = this.maxInFlight - open;
      if (room <= 0) return RUNNING_RECHECK_MS;
      const lines = await batches.lines(batch.id, batch.next_line, Math.min(room, STEP_LINES));
      if (lines.length > 0) return this.admit(batch, lines);
    }
    if (open > 0) return RUNNING_RECHECK_MS;
    if (expired) await batches.finalize(batch, "expired");
    else if (await batches.markFinalizing(batch)) await batches.finalize(batch, "completed");
    return 0;
  }

  /**
   * Reads the input file into lines: every line a JSON request for the batch's endpoint with a
   * custom_id of its own, or the batch fails naming the lines that are not (as OpenAI's does).
   */
  private async validate(batch: BatchRow): Promise<void> {
    const content = await this.deps.files.content(batch.input_file_id, batch.workspace_id);
    const { lines, errors } = content
      ? parseBatchInput(content, batch.endpoint)
      : { lines: [], errors: [{ code: "invalid_file", message: `The input file ${batch.input_file_id} no longer exists.`, line: null }] };
    if (errors.length > 0) {
      await this.deps.batches.failValidation(batch, errors);
      this.deps.logger.info({ batch: batch.id, errors: errors.length }, "batches: input file refused");
      return;
    }
    await this.deps.batches.startRunning(batch, lines);
  }

  /**
   * Admits the next lines in order: each is checked as its regular call would be (schema, model),
   * then ingress charges it to the key's limits and budgets. Lines admitted become jobs, those
   * refused failed lines; the first the limits have no room for stops the step until they do.
   */
  private async admit(batch: BatchRow, lines: BatchLine[]): Promise<number> {
    const route = routeOf(batch.endpoint);
    const refused = new Map<number, RefusedLine>();
    const toAsk: { line: BatchLine; body: Record<string, unknown> }[] = [];
    for (const line of lines) {
      const body = JSON.parse(line.body) as Record<string, unknown>;
      const problem = this.check(route, body, batch.identity);
      if (problem) refused.set(line.line, refusal(line, problem, batch.endpoint));
      else toAsk.push({ line, body });
    }
    const admitted: NewJob[] = [];
    const tickets: TokenTicket[] = [];
    // Reservations of lines that will not run after all, given back once the step is written.
    const released: TokenTicket[] = [];
    let stopAt: number | undefined;
    let wakeInMs = 0;
    for (let from = 0; from < toAsk.length && stopAt === undefined; from += ADMISSION_GROUP) {
      const group = toAsk.slice(from, from + ADMISSION_GROUP);
      const answer = await this.deps.admit({
        workspace_id: batch.workspace_id,
        key_id: batch.key_id,
        route: batch.endpoint as BatchEndpoint,
        bodies: group.map((g) => g.body),
      });
      const identity = answer.identity ?? batch.identity;
      // Kept at rest as an async job's are; without a master key the lines cannot keep them, and fail.
      let credentials: StoredCredentials | undefined;
      let unkept: GatewayError | undefined;
      try {
        credentials = answer.credentials ? this.deps.credentials.sealHeader(batch.workspace_id, answer.credentials) : undefined;
      } catch (err) {
        if (!(err instanceof GatewayError)) throw err;
        unkept = err;
      }
      for (const [index, { line, body }] of group.entries()) {
        const verdict = answer.lines[index];
        if (!verdict || verdict.kind === "wait") {
          stopAt = line.line;
          // Never sooner than a tenth of a second: a limit nearly free again is not asked in a loop.
          wakeInMs = Math.max(verdict?.retry_after_ms ?? FAILED_STEP_WAIT_MS, MIN_WAIT_MS);
          break;
        }
        if (verdict.kind === "admitted" && verdict.ticket) tickets.push(verdict.ticket);
        if (verdict.kind === "refused" || unkept) {
          const error = verdict.kind === "refused" ? { status: verdict.status, envelope: verdict.error } : undefined;
          refused.set(
            line.line,
            error ? { line: line.line, customId: line.custom_id, statusCode: error.status, error: error.envelope } : refusal(line, unkept!, batch.endpoint),
          );
          if (verdict.kind === "admitted" && verdict.ticket) released.push(verdict.ticket);
          continue;
        }
        const hex = randomBytes(16).toString("hex");
        admitted.push({
          id: `job_${hex}`,
          route,
          identity,
          credentials,
          request: { format: "json", body },
          requestId: `batch_req_${hex}`,
          requestHash: "",
          tokenTicket: verdict.ticket,
          captureDays: answer.capture_days,
          batch: { id: batch.id, line: line.line, customId: line.custom_id },
        });
      }
    }
    const last = lines.at(-1)!.line;
    const to = stopAt ?? last + 1;
    const refusedBefore = [...refused.values()].filter((r) => r.line < to);
    let written: JobRow[] = [];
    let moved = false;
    try {
      moved = await this.deps.batches.advance(batch, batch.next_line, to, async (tx) => {
        written = admitted.length > 0 ? await this.deps.jobs.insertRows(tx, admitted) : [];
        await this.deps.batches.refuse(tx, batch, refusedBefore);
      });
    } finally {
      // Written or not (another runner moved this batch first, the batch was cancelled, the write
      // failed), what ingress reserved for lines that will not run here is given back.
      for (const ticket of moved ? released : tickets) await this.release(ticket);
    }
    if (!moved) return 0;
    for (const job of written) this.deps.dispatcher.dispatchSoon(job);
    return wakeInMs;
  }

  private async release(ticket: TokenTicket): Promise<void> {
    const id = randomBytes(16).toString("hex");
    await this.deps.bus.enqueue("limits.settle", { job_id: `job_${id}`, ticket, used: 0 }, { msgId: id });
  }

  /** The 4xx its regular async call would get, or undefined when the body may run. */
  private check(route: string, body: Record<string, unknown>, identity: Identity): GatewayError | undefined {
    const spec = asyncModelRoutes[route]!;
    const parsed = spec.schema!.safeParse(body);
    if (!parsed.success) return fromZodError(parsed.error);
    if (parsed.data.stream === true) return new GatewayError("invalid_request", "stream: true is not supported in a batch", { param: "stream" });
    try {
      this.deps.catalog.resolve(identity, parsed.data.model, spec.modelType);
    } catch (err) {
      if (err instanceof GatewayError) return err;
      throw err;
    }
    return undefined;
  }
}

function refusal(line: BatchLine, error: GatewayError, endpoint: string): RefusedLine {
  return { line: line.line, customId: line.custom_id, statusCode: error.status, error: error.toEnvelope(errorFormatFor(endpoint)) };
}

/**
 * A batch's input file as lines, or what is wrong with it: each line a JSON object with a unique
 * `custom_id`, `method` POST and `url` the batch's endpoint. Lines are numbered from 1, blank lines
 * skipped.
 */
export function parseBatchInput(content: Buffer, endpoint: string): { lines: BatchLine[]; errors: BatchError[] } {
  const lines: BatchLine[] = [];
  const errors: BatchError[] = [];
  const seen = new Set<string>();
  let bad = 0;
  const fail = (error: BatchError) => {
    bad++;
    if (errors.length < MAX_REPORTED_ERRORS) errors.push(error);
  };
  const text = content.toString("utf8");
  let number = 0;
  for (const raw of text.split("\n")) {
    number++;
    // One more than a batch may have is enough to say it has too many: the rest are not read.
    if (lines.length > MAX_BATCH_LINES) break;
    const source = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (source.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch {
      fail({ code: "invalid_json_line", message: "This line is not parseable as valid JSON.", line: number });
      continue;
    }
    const parsed = BatchRequestInput.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      // A key of the caller's may hold U+0000, which the batch's errors (jsonb) cannot keep.
      const param = issue.path.join(".").replaceAll("\u0000", "").slice(0, 200) || null;
      fail({ code: "invalid_request", message: `Invalid request line: ${param ?? "line"}: ${issue.message}`, param, line: number });
      continue;
    }
    if (parsed.data.url !== endpoint) {
      const url = parsed.data.url.replaceAll("\u0000", "").slice(0, 200);
      fail({ code: "mismatched_url", message: `The url ${url} does not match the batch's endpoint ${endpoint}.`, param: "url", line: number });
      continue;
    }
    if (seen.has(parsed.data.custom_id)) {
      fail({
        code: "duplicate_custom_id",
        message: "The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch.",
        param: "custom_id",
        line: number,
      });
      continue;
    }
    seen.add(parsed.data.custom_id);
    lines.push({ line: number, custom_id: parsed.data.custom_id, body: JSON.stringify(parsed.data.body) });
  }
  if (bad > errors.length) errors.push({ code: "too_many_errors", message: `${bad - errors.length} more lines are invalid.`, line: null });
  if (errors.length === 0 && lines.length === 0) errors.push({ code: "empty_file", message: "The input file has no requests.", line: null });
  if (lines.length > MAX_BATCH_LINES) {
    errors.push({ code: "too_many_tasks", message: `A batch can have at most ${MAX_BATCH_LINES} requests; this file has more.`, line: null });
  }
  return { lines, errors };
}
