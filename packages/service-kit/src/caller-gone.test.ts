import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { CallerGone, clientGone, onAbort } from "./caller-gone";

describe("CallerGone", () => {
  it("when aborted twice, then listeners hear it once and the first reason stays", () => {
    const gone = new CallerGone();
    const heard: unknown[] = [];
    onAbort(gone, () => heard.push(gone.reason));
    expect(gone.aborted).toBe(false);
    const first = new Error("first");
    gone.abort(first);
    gone.abort(new Error("second"));
    expect(gone.aborted).toBe(true);
    expect(heard).toEqual([first]);
  });

  it("when aborted without a reason, then the reason is an AbortError, as AbortController's is", () => {
    const gone = new CallerGone();
    gone.abort();
    expect(gone.reason).toMatchObject({ name: "AbortError" });
  });
});

describe("onAbort", () => {
  for (const [kind, make] of [
    [
      "CallerGone",
      () => {
        const g = new CallerGone();
        return { signal: g, abort: () => g.abort() };
      },
    ],
    [
      "AbortSignal",
      () => {
        const c = new AbortController();
        return { signal: c.signal, abort: () => c.abort() };
      },
    ],
  ] as const) {
    it(`when a ${kind} fires, then the listener runs once; once removed, it does not run`, () => {
      const heard: string[] = [];
      const a = make();
      onAbort(a.signal, () => heard.push("kept"));
      const remove = onAbort(a.signal, () => heard.push("removed"));
      remove();
      a.abort();
      expect(heard).toEqual(["kept"]);
    });

    it(`when a ${kind} has already fired, then the listener runs at once`, () => {
      const a = make();
      a.abort();
      let heard = 0;
      const remove = onAbort(a.signal, () => heard++);
      expect(heard).toBe(1);
      remove();
    });
  }
});

describe("clientGone", () => {
  /** A stand-in for a response: a close event, and whether the answer was complete by then. */
  const answer = () => Object.assign(new EventEmitter(), { writableFinished: false, closed: false });

  it("when the response closes before the answer is complete, then the caller is gone", () => {
    const res = answer();
    const gone = clientGone(res);
    res.emit("close");
    expect(gone.aborted).toBe(true);
  });

  it("when the response had closed already, before the answer began, then the caller is gone from the start", () => {
    const res = answer();
    res.emit("close");
    res.closed = true;
    expect(clientGone(res).aborted).toBe(true);
  });

  it("when the response closes after a complete answer, then the caller is not gone", () => {
    const res = answer();
    const gone = clientGone(res);
    res.writableFinished = true;
    res.emit("close");
    expect(gone.aborted).toBe(false);
  });
});
