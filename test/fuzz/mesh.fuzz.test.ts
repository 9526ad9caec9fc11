import { afterAll, beforeAll, describe } from "vitest";
import { floodTests } from "./flood";
import { fuzzClassTests } from "./fuzz-suite";
import { startFuzzTarget, type FuzzTarget } from "./fuzz-target";
import { operatorFuzzTests } from "./operator";
import { fuzzSettings } from "./settings";

/** The fuzz suite against the mesh: one process per service on this machine's Postgres, Redis and NATS. */
const settings = fuzzSettings();

describe.skipIf(settings.mode === "embedded")("when hostile requests reach the mesh", () => {
  let target: FuzzTarget;
  beforeAll(async () => {
    target = await startFuzzTarget("the mesh");
  }, 180_000);
  afterAll(() => target?.stop());

  fuzzClassTests("the mesh", () => target, settings);
  floodTests("the mesh", () => target, settings);
  operatorFuzzTests("the mesh", () => target, settings);
});
