import { describe, expect, it } from "vitest";
import { defaultFlags, parseFlags } from "./flags";

describe("parseFlags", () => {
  it("gives the documented defaults without arguments", () => {
    expect(parseFlags([])).toEqual({
      requests: 2000,
      warmup: 3000,
      block: 100,
      out: "bench/results/latest.json",
      comparePortkey: false,
      scenarios: [],
      baselineFirst: false,
      built: false,
      baselineBuilt: false,
      help: false,
    });
    expect(parseFlags([])).toEqual(defaultFlags);
  });

  it("reads every flag, in both --name value and --name=value forms", () => {
    expect(parseFlags(["--requests", "50", "--warmup=0", "--block", "7", "--out", "/tmp/x.json"])).toEqual({
      requests: 50,
      warmup: 0,
      block: 7,
      out: "/tmp/x.json",
      comparePortkey: false,
      scenarios: [],
      baselineFirst: false,
      built: false,
      baselineBuilt: false,
      help: false,
    });
    expect(parseFlags(["--scenarios", "capacity, open-loop"]).scenarios).toEqual(["capacity", "open-loop"]);
    expect(parseFlags(["-h"]).help).toBe(true);
    expect(parseFlags(["--compare-portkey"]).comparePortkey).toBe(true);
  });

  it("when --baseline names a directory, then it is kept as given; when absent, then there is no baseline key at all", () => {
    expect(parseFlags(["--baseline", "/tmp/gw-base", "--scenarios", "one-in-flight"])).toMatchObject({
      baseline: "/tmp/gw-base",
      scenarios: ["one-in-flight"],
    });
    expect(parseFlags(["--baseline=../gw-base"]).baseline).toBe("../gw-base");
    expect("baseline" in parseFlags([])).toBe(false);
  });

  it("when --baseline-first is given with --baseline, then the baseline starts first; without --baseline, then it is refused", () => {
    expect(parseFlags(["--baseline", "/tmp/gw-base", "--baseline-first"]).baselineFirst).toBe(true);
    expect(parseFlags(["--baseline", "/tmp/gw-base"]).baselineFirst).toBe(false);
    expect(() => parseFlags(["--baseline-first"])).toThrow("--baseline-first: only with --baseline");
  });

  it("when --built is given, then this tree's services are to run from their bundles; with --baseline too, both are kept", () => {
    expect(parseFlags(["--built"]).built).toBe(true);
    expect(parseFlags(["--built", "--baseline", "."])).toMatchObject({ built: true, baseline: "." });
    expect(() => parseFlags(["--built=yes"])).toThrow(/--built/);
  });

  it("when --baseline-built is given with --baseline, then the baseline is to be built and run bundled; without --baseline, then it is refused", () => {
    expect(parseFlags(["--baseline", "/tmp/gw-base", "--baseline-built", "--built"])).toMatchObject({ baselineBuilt: true, built: true });
    expect(parseFlags(["--baseline", "/tmp/gw-base"]).baselineBuilt).toBe(false);
    expect(() => parseFlags(["--baseline-built"])).toThrow("--baseline-built: only with --baseline");
  });

  it.each([
    [["--baseline", " "], "--baseline: expected the directory"],
    [["--baseline"], "--baseline"],
    [["--requests", "0"], "--requests: expected an integer >= 1"],
    [["--block", "0"], "--block: expected an integer >= 1"],
    [["--warmup=-1"], "--warmup: expected an integer >= 0"],
    [["--requests", "abc"], '--requests: expected an integer >= 1, got "abc"'],
    [["--requests", "1e3"], "--requests"],
    [["--requests", "2.5"], "--requests"],
    [["--requests", ""], "--requests"],
    [["--out", " "], "--out"],
  ])("rejects %j naming the flag", (argv, message) => {
    expect(() => parseFlags(argv)).toThrow(message);
  });

  it("rejects unknown flags and stray arguments instead of ignoring them", () => {
    expect(() => parseFlags(["--request", "10"])).toThrow(/request/);
    expect(() => parseFlags(["2000"])).toThrow();
  });
});
