import { BusUsageError, InvalidMessageError, PayloadTooLargeError, type Bus } from "@gw/bus";
import { finishedJobStatuses, jobStatuses, type JobEvent, type JobWork } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { errorFormatFor } from "./app";

/**
 * Publishes a worker's event about a job. The message id makes a repeated report (a redelivered
 * job reporting again, or a finish sent again after the bus failed) one message: per attempt, one
 * per running status and one for the finish.
 * A result too large for the bus is handed to `storeResult` (the jobs service keeps it) and the
 * event names it instead; without one, the job fails and says so, in the route's envelope, since
 * sending it again could never succeed.
 */
/**
 * How long a finish's report is tried again while the bus fails (a NATS server restarting, its
 * acknowledgement timing out): given up, the work is delivered again and its upstream call made and
 * paid again, though the answer is in hand. Within the work message's ack wait (10 s in inference),
 * which the consumer keeps pushing out while the handler runs.
 */
const FINISH_RETRY_MS = 8_000;
const FINISH_RETRY_PAUSE_MS = [100, 250, 500, 1_000];

/** Errors the same report would meet again: the bus closed, a message it refuses. */
function permanent(err: unknown): boolean {
  return err instanceof PayloadTooLargeError || err instanceof InvalidMessageError || err instanceof BusUsageError;
}

/** A finish sent until the bus takes it or FINISH_RETRY_MS pass; its message id makes a repeat one message. */
async function enqueueFinish(bus: Bus, event: JobEvent, msgId: string): Promise<void> {
  const deadline = Date.now() + FINISH_RETRY_MS;
  for (let tries = 0; ; tries++) {
    try {
      await bus.enqueue("jobs.events", event, { msgId });
      return;
    } catch (err) {
      const pause = FINISH_RETRY_PAUSE_MS[Math.min(tries, FINISH_RETRY_PAUSE_MS.length - 1)]!;
      if (permanent(err) || Date.now() + pause > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

export async function reportJobEvent(
  bus: Bus,
  work: JobWork,
  status: string,
  extra: Partial<JobEvent> = {},
  storeResult?: (json: string) => Promise<void>,
): Promise<void> {
  const finished = finishedJobStatuses.includes(status);
  const msgId = `${work.job_id}:${work.attempt}:${finished ? "final" : status}`;
  const event: JobEvent = { job_id: work.job_id, status, attempt: work.attempt, at: Date.now(), ...extra };
  try {
    await (finished ? enqueueFinish(bus, event, msgId) : bus.enqueue("jobs.events", event, { msgId }));
  } catch (err) {
    if (!(err instanceof PayloadTooLargeError) || !finished) throw err;
    if (storeResult && status === jobStatuses.completed && extra.result !== undefined) {
      const { result, ...bare } = event;
      const json = JSON.stringify(result);
      await storeResult(json);
      await enqueueFinish(bus, { ...bare, at: Date.now(), result_stored: { bytes: Buffer.byteLength(json) } }, msgId);
      return;
    }
    const error = new GatewayError(
      "body_too_large",
      `The job's result is ${err.bytes} bytes, more than the ${err.maxBytes} an async result can carry. Call the regular route, or ask for a URL rather than inline data.`,
    );
    const failed: JobEvent = {
      job_id: work.job_id,
      status: jobStatuses.failed,
      attempt: work.attempt,
      at: Date.now(),
      error: error.toEnvelope(errorFormatFor(`/v1/${work.route}`)),
      status_code: error.status,
      ...(extra.outcome ? { outcome: extra.outcome } : {}),
    };
    await enqueueFinish(bus, failed, msgId);
  }
}
