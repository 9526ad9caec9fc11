import { PayloadTooLargeError, type Bus } from "@gw/bus";
import { finishedJobStatuses, jobStatuses, type JobEvent, type JobWork } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { errorFormatFor } from "./app";

/**
 * Publishes a worker's event about a job. The message id makes a repeated report (a redelivered
 * job reporting again) one message: per attempt, one per running status and one for the finish.
 * A result too large for the bus is handed to `storeResult` (the jobs service keeps it) and the
 * event names it instead; without one, the job fails and says so, in the route's envelope, since
 * sending it again could never succeed.
 */
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
    await bus.enqueue("jobs.events", event, { msgId });
  } catch (err) {
    if (!(err instanceof PayloadTooLargeError) || !finished) throw err;
    if (storeResult && status === jobStatuses.completed && extra.result !== undefined) {
      const { result, ...bare } = event;
      const json = JSON.stringify(result);
      await storeResult(json);
      await bus.enqueue("jobs.events", { ...bare, at: Date.now(), result_stored: { bytes: Buffer.byteLength(json) } }, { msgId });
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
    await bus.enqueue("jobs.events", failed, { msgId });
  }
}
