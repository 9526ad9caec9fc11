import type { Bus } from "@gw/bus";
import type { JobCancel, JobWork } from "@gw/contracts";

/** One attempt as a worker runs it. */
export interface RunningAttempt {
  /** Aborts when the jobs service supersedes this attempt: stop paying the upstream, report nothing. */
  readonly signal: AbortSignal;
  /** Whether the attempt was superseded before or while it ran. */
  readonly superseded: boolean;
  /** The worker is done with it (always call, in a `finally`). */
  end(): void;
}

/** Superseded attempts remembered per process, so a late redelivery of one is skipped; oldest go first. */
const REMEMBERED_JOBS = 20_000;

/**
 * The attempts this process runs, and the ones the jobs service has superseded (`jobs.cancel`): a
 * deadline retry first cancels the attempt it replaces, so a live worker aborts its upstream call
 * and the job is paid for once unless the first attempt truly died. The jobs service ignores a
 * superseded attempt's events anyway; this spares the upstream call.
 */
export class JobAttempts {
  private readonly running = new Map<string, { attempt: number; controller: AbortController }[]>();
  /** Per job, the highest attempt known to be superseded (insertion order ≈ age, for the bound). */
  private readonly superseded = new Map<string, number>();
  private readonly unsubscribe: () => void;

  constructor(bus: Bus) {
    this.unsubscribe = bus.subscribe("jobs.cancel", (cancel) => this.cancel(cancel));
  }

  begin(work: JobWork): RunningAttempt {
    const controller = new AbortController();
    if (this.isSuperseded(work.job_id, work.attempt)) controller.abort();
    const entry = { attempt: work.attempt, controller };
    const list = this.running.get(work.job_id);
    if (list) list.push(entry);
    else this.running.set(work.job_id, [entry]);
    return {
      signal: controller.signal,
      get superseded() {
        return controller.signal.aborted;
      },
      end: () => {
        const entries = this.running.get(work.job_id);
        if (!entries) return;
        const rest = entries.filter((e) => e !== entry);
        if (rest.length > 0) this.running.set(work.job_id, rest);
        else this.running.delete(work.job_id);
      },
    };
  }

  isSuperseded(jobId: string, attempt: number): boolean {
    return attempt <= (this.superseded.get(jobId) ?? 0);
  }

  stop(): void {
    this.unsubscribe();
  }

  private cancel({ job_id, attempt }: JobCancel): void {
    if (attempt > (this.superseded.get(job_id) ?? 0)) {
      this.superseded.delete(job_id);
      this.superseded.set(job_id, attempt);
      if (this.superseded.size > REMEMBERED_JOBS) this.superseded.delete(this.superseded.keys().next().value!);
    }
    for (const entry of this.running.get(job_id) ?? []) {
      if (entry.attempt <= attempt) entry.controller.abort(new Error(`attempt ${entry.attempt} of ${job_id} was superseded`));
    }
  }
}
