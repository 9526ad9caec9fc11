import type { Bus } from "@gw/bus";
import type { Logger } from "@gw/logger";

/**
 * The longest a poll may wait for its job (`Prefer: wait=N`): inside what ingress gives a request in
 * flight when it stops (10 s), with room for the read and the answer after the wait, so a rolling
 * restart answers held polls rather than cutting them.
 */
export const MAX_POLL_WAIT_SECONDS = 8;

/**
 * Polls one jobs process holds at once, per workspace and in all. Each holds a connection through
 * ingress to here; past these a poll answers at once, as one without the preference.
 */
export const HELD_POLL_CAPS = { perWorkspace: 256, total: 4_096 };

/** A poll's registration, made before it reads the row so that no finish can slip in between. */
export interface FinishWait {
  /** Resolves when the job is reported finished (at once if it was since registering), after `ms`, or at `end`. */
  until(ms: number): Promise<void>;
  /** Always call, in a `finally`. */
  end(): void;
}

/**
 * Polls that asked to wait for their job to finish (RFC 7240's `Prefer: wait=N`), and the notices
 * that wake them. A finish is applied by whichever jobs replica took its event; that replica wakes
 * its own waiters and tells the others on `jobs.finished` (the finishes of one turn of the event loop
 * in one message), so a poll held anywhere answers as soon as the row says finished.
 */
export class FinishWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  /** Polls held per workspace: polls are not rate limited, so a workspace may hold only so many. */
  private readonly held = new Map<string, number>();
  private total = 0;
  private announcing: string[] = [];
  private stopped = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly caps: { perWorkspace: number; total: number } = HELD_POLL_CAPS,
  ) {
    this.unsubscribe = bus.subscribe("jobs.finished", ({ job_ids }) => this.wake(job_ids));
  }

  /**
   * Registers a poll of `workspaceId` to wait for `jobId`; undefined when this process already
   * holds as many polls as it may (for the workspace, or in all): that poll answers at once.
   */
  register(jobId: string, workspaceId: string): FinishWait | undefined {
    const ofWorkspace = this.held.get(workspaceId) ?? 0;
    if (ofWorkspace >= this.caps.perWorkspace || this.total >= this.caps.total) return undefined;
    this.held.set(workspaceId, ofWorkspace + 1);
    this.total++;
    let ended = false;
    let woken = this.stopped;
    let release: (() => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    const listener = () => {
      woken = true;
      release?.();
    };
    const listeners = this.waiting.get(jobId) ?? new Set();
    listeners.add(listener);
    this.waiting.set(jobId, listeners);
    return {
      until: (ms) =>
        new Promise<void>((resolve) => {
          if (woken) return resolve();
          release = resolve;
          timer = setTimeout(resolve, ms);
        }),
      // Also releases a wait in progress: a poll whose client has gone stops waiting.
      end: () => {
        clearTimeout(timer);
        release?.();
        listeners.delete(listener);
        if (listeners.size === 0 && this.waiting.get(jobId) === listeners) this.waiting.delete(jobId);
        if (ended) return;
        ended = true;
        this.total--;
        const left = (this.held.get(workspaceId) ?? 1) - 1;
        if (left > 0) this.held.set(workspaceId, left);
        else this.held.delete(workspaceId);
      },
    };
  }

  /** Polls held here. */
  get size(): number {
    return this.total;
  }

  /** A job's row now says finished (committed): wake its polls here, and tell the other replicas. */
  announce(jobId: string): void {
    this.wake([jobId]);
    if (this.announcing.push(jobId) > 1) return;
    setImmediate(() => {
      const job_ids = this.announcing;
      this.announcing = [];
      this.bus.publish("jobs.finished", { job_ids }).catch((err: unknown) => {
        // Polls waiting on another replica then answer at the end of their wait, from the row.
        this.logger.warn({ err, jobs: job_ids.length }, "jobs: telling other replicas of finished jobs failed");
      });
    });
  }

  /** Answers every waiting poll now, from its row as it is, so that stopping never waits out their waits. */
  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    this.wake([...this.waiting.keys()]);
  }

  private wake(jobIds: readonly string[]): void {
    for (const id of jobIds) {
      const listeners = this.waiting.get(id);
      if (!listeners) continue;
      this.waiting.delete(id);
      for (const listener of listeners) listener();
    }
  }
}

/**
 * The seconds a poll asks to wait for its job (`Prefer: wait=N`, RFC 7240), at most
 * `MAX_POLL_WAIT_SECONDS`; 0 when it asks for none. Other preferences in the header are ignored.
 */
export function preferredWaitSeconds(prefer: string | undefined): number {
  if (!prefer) return 0;
  // A preference, not a parameter of another one (`handling=lenient; wait=7` is not a wait).
  const match = /(?:^|,)\s*wait\s*=\s*"?(\d+)"?\s*(?:$|[,;])/i.exec(prefer);
  return match ? Math.min(MAX_POLL_WAIT_SECONDS, Number(match[1])) : 0;
}
