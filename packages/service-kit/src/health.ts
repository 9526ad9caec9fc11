import type { Express } from "express";
import { buildInfo } from "@gw/config";

export type ReadinessCheck = () => Promise<boolean>;

/** How long a readiness answer is reused. */
const REUSE_MS = 1_000;

/**
 * /livez answers while the process runs; /readyz answers 200 only when every dependency check
 * passes and the service is not draining. Checks run in parallel, each bounded by a timeout.
 */
export class Health {
  private draining = false;
  private readonly checks = new Map<string, ReadinessCheck>();
  private readonly now: () => number;

  constructor(options: { now?: () => number } = {}) {
    this.now = options.now ?? Date.now;
  }

  addCheck(name: string, check: ReadinessCheck): void {
    this.checks.set(name, check);
  }

  startDraining(): void {
    this.draining = true;
  }

  /**
   * The checks' answers are shared by calls that overlap and reused for a second after: /readyz is
   * open to anyone on ingress's public port, and a flood of it must not become a flood of queries.
   */
  async readiness(timeoutMs = 1000): Promise<{ ready: boolean; checks: Record<string, boolean> }> {
    const now = this.now();
    if (!this.last || now - this.last.at > REUSE_MS) {
      const results = this.runChecks(timeoutMs);
      this.last = { at: now, results };
      results
        .catch(() => undefined)
        .finally(() => {
          if (this.last?.results === results) this.last.at = this.now();
        });
    }
    const entries = await this.last.results;
    const checks = Object.fromEntries(entries);
    return { ready: !this.draining && entries.every(([, ok]) => ok), checks: { ...checks, draining: this.draining } };
  }

  private last: { at: number; results: Promise<(readonly [string, boolean])[]> } | undefined;

  private runChecks(timeoutMs: number): Promise<(readonly [string, boolean])[]> {
    return Promise.all([...this.checks].map(async ([name, check]) => [name, await withTimeout(check, timeoutMs)] as const));
  }

  mount(app: Express): void {
    app.get("/livez", (_req, res) => {
      res.json({ status: "ok" });
    });
    // Which build answers: what an operator checks during a rolling upgrade or a roll-back.
    const { version, commit } = buildInfo();
    app.get("/readyz", async (_req, res) => {
      const { ready, checks } = await this.readiness();
      res.status(ready ? 200 : 503).json({ status: ready ? "ok" : "unavailable", version, commit, checks });
    });
  }
}

async function withTimeout(check: ReadinessCheck, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve()
        .then(check)
        .catch(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
