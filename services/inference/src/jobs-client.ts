import { internalHeaders, JobRequest, type JobWork } from "@gw/contracts";
import { signIdentity } from "@gw/service-kit";
import { Agent, request } from "undici";

/** The jobs service no longer takes this attempt's result: it was superseded, or the job finished. */
export class AttemptSupersededError extends Error {
  constructor(work: JobWork) {
    super(`attempt ${work.attempt} of ${work.job_id} no longer takes a result`);
    this.name = "AttemptSupersededError";
  }
}

/**
 * What a model job's worker asks of the jobs service when the bus cannot carry it: the request a
 * work message left behind, and a result too large for the finished event. Each call is signed
 * with the job's own identity, so the jobs service serves and accepts only that workspace's job.
 */
export class JobsClient {
  // Unbounded: a large result or request takes the time its size needs.
  private readonly agent = new Agent({ headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 });

  constructor(
    private readonly jobsUrl: () => string,
    private readonly internalSecret: string,
  ) {}

  private headers(work: JobWork): Record<string, string> {
    return {
      [internalHeaders.identity]: signIdentity(work.identity, this.internalSecret),
      ...(work.request_id ? { [internalHeaders.requestId]: work.request_id } : {}),
    };
  }

  async request(work: JobWork, signal: AbortSignal): Promise<JobRequest> {
    const res = await request(`${this.jobsUrl()}/v1/jobs/${work.job_id}/request`, { headers: this.headers(work), dispatcher: this.agent, signal });
    if (res.statusCode === 404) {
      await res.body.dump();
      throw new AttemptSupersededError(work);
    }
    if (res.statusCode !== 200) throw new Error(`the jobs service answered ${res.statusCode} for the request of ${work.job_id}`);
    return JobRequest.parse(await res.body.json());
  }

  async storeResult(work: JobWork, json: string, signal: AbortSignal): Promise<void> {
    const res = await request(`${this.jobsUrl()}/v1/jobs/${work.job_id}/result?attempt=${work.attempt}`, {
      method: "PUT",
      headers: { ...this.headers(work), "content-type": "application/json" },
      body: json,
      dispatcher: this.agent,
      signal,
    });
    await res.body.dump();
    if (res.statusCode === 409) throw new AttemptSupersededError(work);
    if (res.statusCode !== 204) throw new Error(`the jobs service answered ${res.statusCode} to the result of ${work.job_id}`);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
