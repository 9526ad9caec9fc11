import { afterAll, beforeAll, describe } from "vitest";
import { floodTests } from "./flood";
import { fuzzClassTests } from "./fuzz-suite";
import { startFuzzTarget, type FuzzTarget } from "./fuzz-target";
import { operatorFuzzTests } from "./operator";
import { fuzzSettings } from "./settings";

/** The fuzz suite against the embedded default: one process, PGlite, in-process bus. */
const settings = fuzzSettings();

describe.skipIf(settings.mode === "mesh")("when hostile requests reach the embedded default", () => {
  let target: FuzzTarget;
  beforeAll(async () => {
    target = await startFuzzTarget("the embedded default");
  }, 180_000);
  afterAll(() => target?.stop());

  fuzzClassTests("the embedded default", () => target, settings);
  floodTests("the embedded default", () => target, settings);
  operatorFuzzTests("the embedded default", () => target, settings);
});
