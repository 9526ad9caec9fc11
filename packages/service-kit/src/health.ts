import type { Express } from "express";

export type ReadinessCheck = () => Promise<boolean>;

/**
 * /livez answers while the process runs; /readyz answers 200 only when every dependency check
 * passes and the service is not draining. Checks run in parallel, each bounded by a timeout.
 */
export class Health {
  private draining = false;
  private readonly checks = new Map<string, ReadinessCheck>();

  addCheck(name: string, check: ReadinessCheck): void {
    this.checks.set(name, check);
  }

  startDraining(): void {
    this.draining = true;
  }

  async readiness(timeoutMs = 1000): Promise<{ ready: boolean; checks: Record<string, boolean> }> {
    const entries = await Promise.all(
      [...this.checks].map(async ([name, check]) => [name, await withTimeout(check, timeoutMs)] as const),
    );
    const checks = Object.fromEntries(entries);
    return { ready: !this.draining && entries.every(([, ok]) => ok), checks: { ...checks, draining: this.draining } };
  }

  mount(app: Express): void {
    app.get("/livez", (_req, res) => {
      res.json({ status: "ok" });
    });
    app.get("/readyz", async (_req, res) => {
      const { ready, checks } = await this.readiness();
      res.status(ready ? 200 : 503).json({ status: ready ? "ok" : "unavailable", checks });
    });
  }
}

async function withTimeout(check: ReadinessCheck, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(check).catch(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
