import { defineConfig } from "vitest/config";
import { LongestFirst } from "./test/sequencer";
import { nameTempRoot } from "./test/temp-root";

const tempRoot = nameTempRoot();

/**
 * Files that each get fresh modules: those that start their own servers, processes or browser, and
 * the tracing tests, which register OpenTelemetry's process-wide providers and check which of its
 * modules were ever loaded (a file before them in a shared worker would have loaded them).
 */
const ownModules = ["test/e2e/**/*.test.ts", "test/browser/**/*.test.ts", "test/fuzz/**/*.test.ts", "packages/telemetry/src/**/*.test.ts"];

export default defineConfig({
  test: {
    // A hang guard, not a speed check: on a two-vCPU machine half as fast as usual, three files at a
    // time, tests that take a few seconds alone took up to 22 s (the embedded default's first start).
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration and end-to-end files start servers and processes, and spend much of their time
    // waiting on them (restarts, windows, retries): on two cores, three files at a time kept the
    // machine 92 % busy over a full run, and took it from 688 to 581 s.
    maxWorkers: 3,
    // A global a test stubs (fetch) is put back after it, so a file sharing its worker never sees it.
    unstubGlobals: true,
    unstubEnvs: true,
    sequence: { sequencer: LongestFirst },
    // Every test's temporary folders inside one per run, removed at its end (test/temp-root.ts).
    env: { TMPDIR: tempRoot },
    globalSetup: ["./test/temp-root.ts"],
    // CI also writes a JSON report, from which .ci/run prints the plain "N passed, N failed" line.
    reporters: process.env.CI ? ["default", ["json", { outputFile: ".ci/results.json" }]] : ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "modules",
          include: ["packages/**/src/**/*.test.ts", "services/**/src/**/*.test.ts", "bench/**/*.test.ts", "deploy/test/**/*.test.ts", "test/*.test.ts"],
          exclude: ["**/node_modules/**", ...ownModules],
          // The files of a worker share one module graph instead of each importing its own: on two
          // cores the 173 unit files took 135 s with a graph each (107 s of it importing) and 67 s so.
          isolate: false,
        },
      },
      { extends: true, test: { name: "processes", include: ownModules } },
    ],
  },
});
