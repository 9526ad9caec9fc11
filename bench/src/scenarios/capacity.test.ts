import { describe, expect, it } from "vitest";
import { searchCapacity, type SearchOptions, type SearchPhase } from "./capacity";

const options: SearchOptions = { startRps: 200, growthFactor: 2, maxRps: 20_000, minRps: 10, narrowSteps: 3 };

/**
 * A server that passes every rate up to `limit`, recording what the search asked for; each rate in
 * `pauses` fails once (a pause of the machine) before the server answers as usual at that rate.
 */
function serverUpTo(limit: number, pauses: number[] = []) {
  const tried: [number, SearchPhase][] = [];
  const pending = [...pauses];
  const tryRate = async (rps: number, phase: SearchPhase) => {
    tried.push([rps, phase]);
    const pause = pending.indexOf(rps);
    if (pause >= 0) {
      pending.splice(pause, 1);
      return { rps, pass: false };
    }
    return { rps, pass: rps <= limit };
  };
  return { tried, tryRate };
}

describe("searchCapacity", () => {
  it("when the limit lies above the start, then it doubles until a fail and halves the gap three times", async () => {
    const { tried, tryRate } = serverUpTo(1234);
    const outcome = await searchCapacity(tryRate, options);
    expect(tried).toEqual([
      [200, "grow"],
      [400, "grow"],
      [800, "grow"],
      [1600, "grow"],
      [1200, "narrow"],
      [1400, "narrow"],
      [1300, "narrow"],
    ]);
    expect(outcome.best?.rps).toBe(1200);
    expect(outcome.firstFail?.rps).toBe(1300);
    expect(outcome.capped).toBe(false);
    expect(outcome.steps.map((s) => s.rps)).toEqual(tried.map(([rps]) => rps));
  });

  it("when the start already fails, then it steps down until a pass and narrows from there", async () => {
    const { tried, tryRate } = serverUpTo(70);
    const outcome = await searchCapacity(tryRate, options);
    expect(tried.map(([rps]) => rps)).toEqual([200, 100, 50, 75, 63, 69]);
    expect(outcome.best?.rps).toBe(69);
    expect(outcome.firstFail?.rps).toBe(75);
  });

  it("when every rate passes, then it stops at the cap and says so", async () => {
    const { tried, tryRate } = serverUpTo(Number.POSITIVE_INFINITY);
    const outcome = await searchCapacity(tryRate, { ...options, startRps: 5000 });
    expect(tried.map(([rps]) => rps)).toEqual([5000, 10_000, 20_000]);
    expect(outcome).toMatchObject({ best: { rps: 20_000 }, firstFail: undefined, capped: true });
  });

  it("when nothing passes, then it gives up below the lowest rate with no best", async () => {
    const { tried, tryRate } = serverUpTo(0);
    const outcome = await searchCapacity(tryRate, { ...options, startRps: 40 });
    expect(tried.map(([rps]) => rps)).toEqual([40, 20, 10]);
    expect(outcome.best).toBeUndefined();
    expect(outcome.firstFail?.rps).toBe(10);
  });

  it("when the gap closes before the narrowing steps run out, then it stops early", async () => {
    const { tried, tryRate } = serverUpTo(10);
    await searchCapacity(tryRate, { ...options, startRps: 10, growthFactor: 1.2, narrowSteps: 10 });
    expect(tried.map(([rps]) => rps)).toEqual([10, 12, 11]);
  });
});

describe("searchCapacity with a majority of three tries per rate", () => {
  const majority = { ...options, trials: 3 };

  it("when one try at a sustainable rate hits a pause, then the next two pass and the search goes on", async () => {
    const { tried, tryRate } = serverUpTo(1234, [400]);
    const outcome = await searchCapacity(tryRate, majority);
    expect(tried.slice(0, 5)).toEqual([
      [200, "grow"],
      [200, "repeat"],
      [400, "grow"],
      [400, "repeat"],
      [400, "repeat"],
    ]);
    expect(outcome.best?.rps).toBe(1200);
    expect(outcome.firstFail?.rps).toBe(1300);
  });

  it("when a rate is really too high, then two failed tries decide it and a third is not run", async () => {
    const { tried, tryRate } = serverUpTo(300);
    const outcome = await searchCapacity(tryRate, majority);
    expect(tried).toEqual([
      [200, "grow"],
      [200, "repeat"],
      [400, "grow"],
      [400, "repeat"],
      [300, "narrow"],
      [300, "repeat"],
      [350, "narrow"],
      [350, "repeat"],
      [325, "narrow"],
      [325, "repeat"],
    ]);
    expect(outcome.best?.rps).toBe(300);
    expect(outcome.firstFail?.rps).toBe(325);
    expect(outcome.steps.filter((step) => step.rps === 325).every((step) => !step.pass)).toBe(true);
  });

  it("when a too-high rate passes one try by luck, then the majority still fails it", async () => {
    const lucky = new Set([1600]);
    const tried: number[] = [];
    const tryRate = async (rps: number) => {
      tried.push(rps);
      const pass = rps <= 1234 || lucky.delete(rps);
      return { rps, pass };
    };
    const outcome = await searchCapacity(tryRate, majority);
    expect(tried.filter((rps) => rps === 1600)).toHaveLength(3);
    expect(outcome.best?.rps).toBe(1200);
    expect(outcome.firstFail?.rps).toBe(1300);
  });

  it("when one try at the start fails and so does a repeat, then the rate fails as a whole", async () => {
    const { tryRate } = serverUpTo(1234, [200, 200]);
    const outcome = await searchCapacity(tryRate, { ...majority, minRps: 150 });
    expect(outcome.best).toBeUndefined();
    expect(outcome.firstFail?.rps).toBe(200);
  });

  it("when the number of tries is even or not a whole number, then the search refuses to start", async () => {
    const { tryRate } = serverUpTo(1234);
    for (const trials of [2, 0, 1.5]) await expect(searchCapacity(tryRate, { ...options, trials })).rejects.toThrow(/odd/);
  });

  it("when a single try is asked for, then one pause ends the growth", async () => {
    const { tryRate } = serverUpTo(1234, [400]);
    const outcome = await searchCapacity(tryRate, options);
    expect(outcome.best?.rps).toBe(375);
    expect(outcome.firstFail?.rps).toBe(400);
  });
});
