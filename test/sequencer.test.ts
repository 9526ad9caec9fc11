import { existsSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { durationsOf } from "./record-durations";
import { recordedSeconds, weightOf } from "./sequencer";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

describe("the order test files start in, on a fresh clone", () => {
  it("weighs a file that runs a shared suite for one mode as half that suite, and any other file as its size", () => {
    const suite = statSync(here("./browser/console-browser-suite.ts")).size;
    expect(weightOf(here("./browser/console.mesh.browser.test.ts"))).toBe(suite / 2);
    expect(weightOf(here("./e2e/async-jobs.embedded.e2e.test.ts"))).toBe(statSync(here("./e2e/async-jobs-suite.ts")).size / 2);
    expect(weightOf(here("./sequencer.test.ts"))).toBe(statSync(here("./sequencer.test.ts")).size);
    // The browser suite's half still outweighs every unit test file, which is what puts it first.
    expect(suite / 2).toBeGreaterThan(statSync(here("../packages/errors/src/gateway-error.test.ts")).size);
  });

  it("starts the files timed in durations.json first, longest first, whatever their size", () => {
    const known = recordedSeconds(here("./durations.json"));
    expect(known.size).toBeGreaterThan(10);
    // Every file listed is still there: a renamed one would silently lose its place.
    for (const file of known.keys()) expect(existsSync(here(`../${file}`)), file).toBe(true);
    const small = here("./e2e/data-folder.e2e.test.ts");
    const large = here("../services/inference/src/translate/stream.test.ts");
    expect(statSync(large).size).toBeGreaterThan(statSync(small).size);
    expect(weightOf(small, 1)).toBeGreaterThan(weightOf(large));
    expect(weightOf(small, 30)).toBeGreaterThan(weightOf(large, 29));
  });

  it("records from a vitest report, this checkout's or another's, the files of 3 s or more, in seconds, longest first", () => {
    const root = fileURLToPath(new URL("..", import.meta.url));
    const report = {
      testResults: [
        { name: `${root}test/e2e/data-folder.e2e.test.ts`, startTime: 1_000, endTime: 4_400 },
        { name: `${root}test/sequencer.test.ts`, startTime: 1_000, endTime: 1_300 },
        // .ci/run's clone, elsewhere on the disk: the same file here.
        { name: "/tmp/tmp.X1/gw/test/e2e/secrets.e2e.test.ts", startTime: 0, endTime: 61_600 },
        // A file this checkout does not have is left out.
        { name: "/tmp/tmp.X1/gw/test/e2e/gone.e2e.test.ts", startTime: 0, endTime: 90_000 },
      ],
    };
    const durations = durationsOf(report);
    expect(durations).toEqual({ "test/e2e/secrets.e2e.test.ts": 62, "test/e2e/data-folder.e2e.test.ts": 3 });
    expect(Object.keys(durations)).toEqual(["test/e2e/secrets.e2e.test.ts", "test/e2e/data-folder.e2e.test.ts"]);
  });

  it("reads no timings from a list it cannot read", () => {
    expect(recordedSeconds(here("./no-such-durations.json")).size).toBe(0);
  });
});
