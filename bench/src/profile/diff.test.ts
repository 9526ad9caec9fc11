import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type CpuProfile, differences, samplingInterval, selfSamples } from "./diff";

const frame = (functionName: string, url = "") => ({ functionName, url });

/** f and g in a bundle chunk whose hash is `chunk`; samples every 100 µs from 0. */
function profile(chunk: string, samples: number[]): CpuProfile {
  const url = `file:///app/services/ingress/dist/chunk-${chunk}.js`;
  return {
    nodes: [
      { id: 1, callFrame: frame("(root)") },
      { id: 2, callFrame: frame("(idle)") },
      { id: 3, callFrame: frame("f", url) },
      { id: 4, callFrame: frame("g", url) },
    ],
    startTime: 0,
    endTime: samples.length * 100,
    samples,
    timeDeltas: samples.map(() => 100),
  };
}

describe("selfSamples", () => {
  it("counts each function's samples from the given point of the run on, idle left out", () => {
    // Samples at 100 … 600 µs; from half of the 600 on: g (300), idle (400), f (500), g (600).
    const counts = selfSamples(profile("AAAA1111", [3, 3, 4, 2, 3, 4]), 0.5);
    expect(Object.fromEntries(counts)).toEqual({ "f services/ingress/dist/chunk.js": 1, "g services/ingress/dist/chunk.js": 2 });
    expect(selfSamples(profile("AAAA1111", [3, 3, 4, 2, 3, 4])).get("f services/ingress/dist/chunk.js")).toBe(3);
  });

  it("leaves out the samples after the given end: a service's stop is not counted as its work", () => {
    // Samples at 100 … 600 µs; up to two thirds of the 600: f (100, 200), g (300), idle (400).
    const counts = selfSamples(profile("AAAA1111", [3, 3, 4, 2, 3, 4]), 0, 2 / 3);
    expect(Object.fromEntries(counts)).toEqual({ "f services/ingress/dist/chunk.js": 2, "g services/ingress/dist/chunk.js": 1 });
  });
});

describe("samplingInterval", () => {
  it("is the interval both profiles record, 100 µs for profiles that record none, and undefined when they differ unless overridden", () => {
    const at = (us?: number): CpuProfile => ({ ...profile("AAAA1111", [3]), ...(us === undefined ? {} : { samplingIntervalUs: us }) });
    expect(samplingInterval([at(200), at(200)])).toBe(200);
    expect(samplingInterval([at(), at()])).toBe(100);
    expect(samplingInterval([at(200), at(100)])).toBeUndefined();
    expect(samplingInterval([at(200), at()])).toBeUndefined();
    expect(samplingInterval([at(200), at(100)], 150)).toBe(150);
  });
});

describe("differences", () => {
  it("matches one function across two builds' chunks and gives µs a request, the largest difference first", () => {
    const a = selfSamples(profile("AAAA1111", [3, 3, 3, 4]));
    const b = selfSamples(profile("BBBB2222", [3, 4, 4, 4]));
    // 100 µs a sample over 2 requests: f 150 against 50, g 50 against 150.
    expect(differences(a, b, 100, 2)).toEqual([
      { key: "f services/ingress/dist/chunk.js", a: 150, b: 50, diff: 100 },
      { key: "g services/ingress/dist/chunk.js", a: 50, b: 150, diff: -100 },
    ]);
  });
});

describe("the profile hook", () => {
  const hook = fileURLToPath(new URL("./hook.mjs", import.meta.url));

  it("when BENCH_PROFILE_DIR is set, then a service's profile is written at exit, named by checkout, service and pid; else nothing", () => {
    const root = mkdtempSync(join(tmpdir(), "profile-hook-"));
    const script = join(root, "gw-off", "services", "demo", "main.js");
    mkdirSync(join(root, "gw-off", "services", "demo"), { recursive: true });
    writeFileSync(script, "let x = 0; for (let i = 0; i < 2e6; i++) x += Math.sqrt(i); console.log(process.pid);\n");
    const out = join(root, "profiles");
    mkdirSync(out);
    const run = (env: Record<string, string>) => spawnSync(process.execPath, ["--import", hook, script], { env: { ...process.env, ...env }, encoding: "utf8" });
    const profiled = run({ BENCH_PROFILE_DIR: out, BENCH_PROFILE_INTERVAL_US: "250" });
    expect(profiled.status).toBe(0);
    const pid = profiled.stdout.trim();
    expect(readdirSync(out)).toEqual([`gw-off.demo.${pid}.cpuprofile`]);
    const written = JSON.parse(readFileSync(join(out, `gw-off.demo.${pid}.cpuprofile`), "utf8")) as CpuProfile;
    expect(written.samples.length).toBeGreaterThan(0);
    // What one sample stands for, for diff.ts.
    expect(written.samplingIntervalUs).toBe(250);
    expect(written.nodes.some((n) => n.callFrame.url.endsWith("/gw-off/services/demo/main.js"))).toBe(true);

    const env = { ...process.env };
    delete env.BENCH_PROFILE_DIR;
    expect(spawnSync(process.execPath, ["--import", hook, script], { env, encoding: "utf8" }).status).toBe(0);
    expect(readdirSync(out)).toHaveLength(1);
  });
});
