import { describe, expect, it } from "vitest";
import type { RouteTarget } from "../routes";
import { FactsTape, type UsageFacts } from "./facts-tape";

const chat = { backend: "inference", label: "chat" } as unknown as RouteTarget;
const speech = { backend: "inference", label: "speech" } as unknown as RouteTarget;

function facts(n: number, over: Partial<UsageFacts> = {}): UsageFacts {
  return {
    requestId: `req_${n}`,
    startedAtNs: 86_400_123_456_789 + n,
    durationMs: 12.345 + n,
    workspaceId: `ws_${n % 3}`,
    keyId: `key_${n % 5}`,
    path: "/v1/chat/completions",
    target: n % 2 === 0 ? chat : speech,
    status: 200 + (n % 300),
    stream: n % 2 === 1,
    model: n % 4 === 0 ? undefined : `model-${n}`,
    errorType: n % 7 === 0 ? "rate_limited" : undefined,
    outcomeText: n % 5 === 0 ? undefined : `p=openai&um=gpt-4o&a=1&in=${n}&out=${2 * n}`,
    ...over,
  };
}

describe("the facts tape", () => {
  it("when facts are pushed and shifted, then each comes back whole and in order, absent fields absent", () => {
    const tape = new FactsTape();
    const pushed = Array.from({ length: 50 }, (_, n) => facts(n));
    for (const f of pushed) tape.push(f);
    expect(tape.length).toBe(50);
    const shifted = pushed.map(() => tape.shift());
    expect(shifted).toEqual(pushed);
    expect(shifted[0]?.target).toBe(chat);
    expect(tape.shift()).toBeUndefined();
    expect(tape.length).toBe(0);
  });

  it("when a string is outside ASCII or long, then it comes back as it went in", () => {
    const tape = new FactsTape(64);
    const odd = facts(1, {
      model: "modèle-日本語-🙂",
      errorType: "é".repeat(3_000),
      outcomeText: "x".repeat(70_000),
      requestId: "req_ÿ",
      path: "/v1/chat/completions/é",
    });
    tape.push(odd);
    expect(tape.shift()).toEqual(odd);
  });

  it("when a string holds a lone surrogate, then it comes back with U+FFFD in its place and the strings after it whole", () => {
    const tape = new FactsTape();
    tape.push(facts(1, { model: "a\uD800b", errorType: "c\uDC00", outcomeText: "p=openai" }));
    expect(tape.shift()).toMatchObject({ model: "a\uFFFDb", errorType: "c\uFFFD", outcomeText: "p=openai", path: "/v1/chat/completions" });
  });

  it("when pushes and shifts interleave past the buffer's size, then nothing is lost, reordered or altered", () => {
    // A small tape, so it compacts and grows many times.
    const tape = new FactsTape(256);
    const expected: UsageFacts[] = [];
    const got: (UsageFacts | undefined)[] = [];
    let n = 0;
    for (let round = 0; round < 200; round++) {
      for (let k = 0; k < (round % 13) + 1; k++) {
        const f = facts(n++, round % 17 === 0 ? { outcomeText: "y".repeat(500 + round) } : {});
        tape.push(f);
        expected.push(f);
      }
      for (let k = 0; k < (round % 11) + 1 && tape.length > 0; k++) got.push(tape.shift());
    }
    while (tape.length > 0) got.push(tape.shift());
    expect(got).toEqual(expected);
  });

  it("when the newest facts are dropped, then the tape holds what it held before them", () => {
    const tape = new FactsTape(128);
    tape.push(facts(1));
    tape.push(facts(2));
    tape.dropNewest();
    tape.push(facts(3));
    expect([tape.shift(), tape.shift(), tape.shift()]).toEqual([facts(1), facts(3), undefined]);
    tape.push(facts(4));
    tape.dropNewest();
    expect(tape.length).toBe(0);
    tape.push(facts(5));
    expect(tape.shift()).toEqual(facts(5));
  });
});
