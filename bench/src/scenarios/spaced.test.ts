import { describe, expect, it } from "vitest";
import type { TimedClient } from "../http-client";
import { afterAPause } from "./spaced";

describe("afterAPause", () => {
  it("when a request is timed, then the pause comes first and only the request's own time is returned", async () => {
    const log: string[] = [];
    const inner: TimedClient = {
      timed: async () => {
        log.push("request");
        return 1234;
      },
      once: async () => {
        log.push("once");
        return { status: 200, headers: {}, text: "ok" };
      },
      close: async () => void log.push("close"),
    };
    const client = afterAPause(inner, 50, async (ms) => void log.push(`pause ${ms}`));
    expect(await client.timed()).toBe(1234);
    expect(await client.timed()).toBe(1234);
    expect((await client.once()).text).toBe("ok");
    await client.close();
    expect(log).toEqual(["pause 50", "request", "pause 50", "request", "once", "close"]);
  });
});
