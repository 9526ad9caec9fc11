import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allowedByAll, matchesPattern, type MatchMeter } from "./patterns";

/** The matcher this one replaced: each glob compiled into an anchored RegExp. */
function regexMatch(pattern: string, name: string): boolean {
  const source = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, "\\$&"))
    .join(".*");
  return pattern === "*" || new RegExp(`^${source}$`).test(name);
}

describe("matchesPattern", () => {
  it("when the pattern is *, then every name matches", () => {
    for (const name of ["gpt-4o-mini", "claude-sonnet", "a", "x/y:z@1"]) expect(matchesPattern("*", name)).toBe(true);
  });

  it("when the pattern has no *, then only the exact name matches", () => {
    expect(matchesPattern("gpt-4o", "gpt-4o")).toBe(true);
    expect(matchesPattern("gpt-4o", "gpt-4o-mini")).toBe(false);
    expect(matchesPattern("gpt-4o", "xgpt-4o")).toBe(false);
    expect(matchesPattern("gpt-4o", "GPT-4O")).toBe(false);
  });

  it("when a glob has * at the end, start or middle, then it matches any run of characters there", () => {
    expect(matchesPattern("gpt-*", "gpt-4o-mini")).toBe(true);
    expect(matchesPattern("gpt-*", "gpt-")).toBe(true);
    expect(matchesPattern("gpt-*", "claude-gpt-4")).toBe(false);
    expect(matchesPattern("*-mini", "gpt-4o-mini")).toBe(true);
    expect(matchesPattern("*-mini", "gpt-4o-mini-2")).toBe(false);
    expect(matchesPattern("claude-*-4-5", "claude-sonnet-4-5")).toBe(true);
    expect(matchesPattern("claude-*-4-5", "claude-sonnet-4-6")).toBe(false);
    expect(matchesPattern("a*b*c", "a-x-b-y-c")).toBe(true);
    expect(matchesPattern("a*b*c", "a-x-c-y-b")).toBe(false);
  });

  it("when a name holds regex metacharacters, then they are literal and never act as regex", () => {
    // "." must not match any character
    expect(matchesPattern("gpt-4o.mini", "gpt-4oXmini")).toBe(false);
    expect(matchesPattern("gpt-4o.mini", "gpt-4o.mini")).toBe(true);
    expect(matchesPattern("gpt-4o.*", "gpt-4o.mini")).toBe(true);
    expect(matchesPattern("gpt-4o.*", "gpt-4oXmini")).toBe(false);
    expect(matchesPattern("*.mini", "gpt-4oXmini")).toBe(false);
    // other metacharacters, in globs where they would otherwise be compiled into a RegExp
    expect(matchesPattern("a+*", "aaa")).toBe(false);
    expect(matchesPattern("a+*", "a+b")).toBe(true);
    expect(matchesPattern("m(1)*", "m1")).toBe(false);
    expect(matchesPattern("m(1)*", "m(1)-x")).toBe(true);
    expect(matchesPattern("m?*", "x")).toBe(false);
    expect(matchesPattern("[ab]*", "a")).toBe(false);
    expect(matchesPattern("[ab]*", "[ab]-1")).toBe(true);
    expect(matchesPattern("org/model$*", "org/model$v2")).toBe(true);
    expect(matchesPattern("^x*", "x1")).toBe(false);
  });

  it("when the same glob is used twice, then it answers the same (the compiled cache is not stateful)", () => {
    // A /g regex kept in a cache would alternate true/false on repeated tests.
    expect([1, 2, 3].map(() => matchesPattern("gpt-*", "gpt-4o"))).toEqual([true, true, true]);
  });
});

describe("matchesPattern: linear time", () => {
  const metered = (pattern: string, name: string) => {
    const meter: MatchMeter = { steps: 0 };
    return { matched: matchesPattern(pattern, name, meter), steps: meter.steps };
  };

  it("when a pathological glob meets a 100 kB name, then the work grows with the name's length, not a power of it", () => {
    // As a RegExp, ^a.*a.*…a.*b$ tries every way to place ten a's before failing: O(n^10).
    expect(metered("a*b", "aab").steps).toBeGreaterThan(0); // a matcher without a meter stops here, before the hang
    const pattern = `${"a*".repeat(10)}b`;
    for (const name of ["a".repeat(100_000), `${"a".repeat(100_000)}b`, `${"ab".repeat(50_000)}c`]) {
      const { steps } = metered(pattern, name);
      expect(steps, name.slice(-3)).toBeLessThanOrEqual((name.length + 1) * pattern.length);
    }
    expect(metered(pattern, `${"a".repeat(100_000)}b`).matched).toBe(true);
    expect(metered(pattern, "a".repeat(100_000)).matched).toBe(false);
    const doubled = metered(`*${"x*".repeat(20)}`, "y".repeat(200_000)).steps;
    const single = metered(`*${"x*".repeat(20)}`, "y".repeat(100_000)).steps;
    expect(doubled).toBeLessThanOrEqual(2 * single + 2);
  });

  it("when globs and names are drawn at random, then it agrees with the RegExp it replaced", () => {
    const alphabet = ["a", "b", "-", ".", "+", "(", "$", "\n", "\r", "\u2028"];
    const text = (max: number) => fc.array(fc.constantFrom(...alphabet), { maxLength: max }).map((c) => c.join(""));
    const glob = fc.array(fc.oneof(text(3), fc.constant("*")), { maxLength: 6 }).map((parts) => parts.join(""));
    fc.assert(
      fc.property(glob, text(12), (pattern, name) => {
        expect(matchesPattern(pattern, name)).toBe(regexMatch(pattern, name));
      }),
      { numRuns: 5_000 },
    );
  });

  it("when a name is built to match a random glob, then both matchers accept it", () => {
    // Parts and fillers without `*` or line breaks: any filler may stand where a `*` is.
    const text = fc.string({ maxLength: 4, unit: fc.constantFrom("a", "b", "-", ".", "x") });
    fc.assert(
      fc.property(fc.array(fc.tuple(text, text), { minLength: 1, maxLength: 5 }), text, (pairs, head) => {
        const pattern = [head, ...pairs.map(([part]) => part)].join("*");
        const name = head + pairs.map(([part, filler]) => filler + part).join("");
        expect(matchesPattern(pattern, name)).toBe(true);
        expect(regexMatch(pattern, name)).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("allowedByAll", () => {
  it("when there is one list, then a name is allowed when any pattern of it matches", () => {
    expect(allowedByAll([["gpt-*", "claude-sonnet"]], "gpt-4o")).toBe(true);
    expect(allowedByAll([["gpt-*", "claude-sonnet"]], "claude-sonnet")).toBe(true);
    expect(allowedByAll([["gpt-*", "claude-sonnet"]], "claude-opus")).toBe(false);
  });

  it("when there are two lists, then a name must match a pattern of both", () => {
    const lists = [["*"], ["gpt-4o-mini", "text-embed-*"]];
    expect(allowedByAll(lists, "gpt-4o-mini")).toBe(true);
    expect(allowedByAll(lists, "text-embed-small")).toBe(true);
    expect(allowedByAll(lists, "claude-sonnet")).toBe(false);

    // the key cannot widen the workspace: "*" on the key does not let claude through
    const narrowed = [["gpt-*"], ["*"]];
    expect(allowedByAll(narrowed, "gpt-4o")).toBe(true);
    expect(allowedByAll(narrowed, "claude-sonnet")).toBe(false);
  });

  it("when a list is empty, then nothing is allowed", () => {
    expect(allowedByAll([[]], "gpt-4o")).toBe(false);
    expect(allowedByAll([["*"], []], "gpt-4o")).toBe(false);
  });
});
