import { statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { weightOf } from "./sequencer";

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
});
