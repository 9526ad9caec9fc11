/**
 * Teardown steps run last-in first-out, once, whether the run ends normally, fails, or is
 * interrupted: the mesh's processes must never outlive the benchmark.
 */
export class Cleanup {
  private readonly steps: { name: string; run: () => Promise<void> }[] = [];
  private running: Promise<void> | undefined;

  /** True once teardown has begun: start nothing new after that. */
  get stopping(): boolean {
    return this.running !== undefined;
  }

  add(name: string, run: () => Promise<void>): void {
    this.steps.push({ name, run });
  }

  /** Runs every step, including steps added while it runs; a failing step does not stop the rest. */
  run(): Promise<void> {
    this.running ??= (async () => {
      for (let step = this.steps.pop(); step; step = this.steps.pop()) {
        try {
          await step.run();
        } catch (err) {
          process.stderr.write(`cleanup ${step.name} failed: ${(err as Error).message}\n`);
          process.exitCode = 1;
        }
      }
    })();
    return this.running;
  }
}
