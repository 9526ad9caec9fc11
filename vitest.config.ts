import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["packages/**/src/**/*.test.ts", "services/**/src/**/*.test.ts", "test/**/*.test.ts", "bench/**/*.test.ts", "deploy/test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Integration and end-to-end files start servers and processes: two cores, so two at a time.
    maxWorkers: 2,
    // CI also writes a JSON report, from which .ci/run prints the plain "N passed, N failed" line.
    reporters: process.env.CI ? ["default", ["json", { outputFile: ".ci/results.json" }]] : ["default"],
  },
});
