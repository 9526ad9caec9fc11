import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStreamClient, SseSplitter } from "./sse-timing";
import type { RequestTarget } from "./http-client";

/** Each route writes its answer in these writes, with a pause before each write after the first. */
const scripts: Record<string, { status?: number; writes: string[]; pauseMs?: number }> = {
  "/paced": { writes: ["data: a\n\n", "data: b\n\n", "data: c\n\ndata: d\n\n", "data: [DONE]\n\n"], pauseMs: 30 },
  // A comment, an event split across writes, CRLF framing and two data lines in one event.
  "/awkward": { writes: [': keep-alive\n\ndata: {"x":', "1}\r\n\r\ndata: line 1\ndata: line 2\n\n", "data: [DONE]\n\n"], pauseMs: 30 },
  "/empty": { writes: [": nothing but a comment\n\n"] },
  "/refused": { status: 401, writes: ['{"error":{"message":"no"}}'] },
};

let server: Server;
let origin: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    const script = scripts[req.url ?? ""];
    if (!script) return void res.writeHead(404).end();
    res.writeHead(script.status ?? 200, { "content-type": "text/event-stream" });
    void play(res, script.writes, script.pauseMs ?? 0);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
});

async function play(res: ServerResponse, writes: readonly string[], pauseMs: number): Promise<void> {
  for (const [i, chunk] of writes.entries()) {
    if (i > 0) await sleep(pauseMs);
    res.write(chunk);
  }
  res.end();
}

const target = (path: string): RequestTarget => ({ origin, path, headers: { "content-type": "application/json" }, body: Buffer.from("{}") });

async function timedOnce(path: string) {
  const client = createStreamClient(target(path));
  try {
    return await client.timed();
  } finally {
    await client.close();
  }
}

describe("the stream client", () => {
  it("when events arrive in separate writes, then each is stamped on arrival, with one gap per event after the first", async () => {
    const t = await timedOnce("/paced");
    expect(t.data).toEqual(["a", "b", "c", "d", "[DONE]"]);
    expect(t.gapsMicros).toHaveLength(4);
    // Lower bounds on arrival times only: a write can arrive late on a busy machine, never early
    // (and a late stamp on one event shortens the next gap, so gaps alone have no lower bound).
    const arrivals = t.gapsMicros.map((_, i) => t.firstEventMicros + t.gapsMicros.slice(0, i + 1).reduce((a, b) => a + b, 0));
    expect(arrivals[0]).toBeGreaterThanOrEqual(25_000); // "b", one pause after "a"
    expect(arrivals[1]).toBeGreaterThanOrEqual(55_000); // "c"
    expect(arrivals[3]).toBeGreaterThanOrEqual(85_000); // "[DONE]"
    expect(t.totalMicros).toBeGreaterThanOrEqual(arrivals[3] as number);
  });

  it("when two events come in one write, then the second one's gap is zero", async () => {
    const t = await timedOnce("/paced");
    expect(t.gapsMicros[2]).toBe(0); // "d" came with "c"
  });

  it("when an event is split across writes, then it counts once, stamped when its end arrives", async () => {
    const t = await timedOnce("/awkward");
    expect(t.data).toEqual(['{"x":1}', "line 1\nline 2", "[DONE]"]);
    expect(t.firstEventMicros).toBeGreaterThanOrEqual(20_000);
    expect(t.gapsMicros[0]).toBe(0);
  });

  it("when the stream has no event, then it throws", async () => {
    await expect(timedOnce("/empty")).rejects.toThrow(/without an event/);
  });

  it("when the answer is not a 200, then it throws with the status and body", async () => {
    await expect(timedOnce("/refused")).rejects.toThrow(/answered 401: .*no/);
  });

  it("when one client streams twice in a row, then both streams are read whole", async () => {
    const client = createStreamClient(target("/paced"));
    try {
      expect((await client.timed()).data).toHaveLength(5);
      expect((await client.timed()).data).toHaveLength(5);
    } finally {
      await client.close();
    }
  });
});

describe("SseSplitter", () => {
  it("when a CRLF is split between reads, then it still ends the event once", () => {
    const splitter = new SseSplitter();
    expect(splitter.push(Buffer.from("data: a\r\n\r"))).toEqual([]);
    expect(splitter.push(Buffer.from("\ndata: b\r\n\r\n"))).toEqual(["a", "b"]);
  });

  it("when a multi-byte character is split between reads, then it is decoded whole", () => {
    const bytes = Buffer.from("data: é\n\n");
    const splitter = new SseSplitter();
    expect([...splitter.push(bytes.subarray(0, 7)), ...splitter.push(bytes.subarray(7))]).toEqual(["é"]);
  });
});
