/**
 * Teardown steps run last-in first-out, once, whether the run ends normally, fails, or is
 * interrupted: the mesh's processes must never outlive the benchmark.
 */
export class Cleanup {
  private readonly steps: { name: string; run: () => Promise<void> }[] = [];
  private running: Promise<void> | undefined;

  add(name: string, run: () => Promise<void>): void {
    this.steps.push({ name, run });
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.reverse()) {
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
