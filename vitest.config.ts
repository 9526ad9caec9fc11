import { defineConfig } from "vitest/config";
import { LongestFirst } from "./test/sequencer";

export default defineConfig({
  test: {
    include: ["packages/**/src/**/*.test.ts", "services/**/src/**/*.test.ts", "test/**/*.test.ts", "bench/**/*.test.ts", "deploy/test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Integration and end-to-end files start servers and processes, and spend much of their time
    // waiting on them (restarts, windows, retries): on two cores, three files at a time kept the
    // machine 92 % busy over a full run, and took it from 688 to 581 s.
    maxWorkers: 3,
    sequence: { sequencer: LongestFirst },
    // CI also writes a JSON report, from which .ci/run prints the plain "N passed, N failed" line.
    reporters: process.env.CI ? ["default", ["json", { outputFile: ".ci/results.json" }]] : ["default"],
  },
});
