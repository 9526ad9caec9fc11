import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CallerGone } from "./caller-gone";
import { createUpstreamAgent, defaultRetryPolicy, readBounded, sendUpstream, type UpstreamRequest } from "./upstream";

/** A local upstream whose next answer each test scripts; it records what reached it. */
let server: Server;
let base: string;
let answer: (req: IncomingMessage, res: ServerResponse) => void;
const seen: { method?: string; url?: string; headers: IncomingMessage["headers"]; body: string; closedEarly: boolean }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const record = { method: req.method, url: req.url, headers: req.headers, body: "", closedEarly: false };
    seen.push(record);
    req.setEncoding("utf8");
    req.on("data", (part: string) => (record.body += part));
    res.on("close", () => (record.closedEarly = !res.writableFinished));
    req.on("end", () => answer(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const agent = createUpstreamAgent();
afterAll(() => agent.close());
afterEach(() => {
  seen.length = 0;
});

const call = (over: Partial<UpstreamRequest> = {}): UpstreamRequest => ({
  url: `${base}/v1/chat/completions?trace=1`,
  method: "POST",
  headers: { "content-type": "application/json", authorization: "Bearer sk-test" },
  body: JSON.stringify({ model: "m", messages: [] }),
  timeoutMs: 5_000,
  buffered: true,
  ...over,
});

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(check()).toBe(true);
};

describe("sendUpstream, buffered", () => {
  it("when the upstream answers in several pieces, then the whole body is read once with its status and headers", async () => {
    answer = (_req, res) => {
      res.writeHead(201, { "content-type": "application/json", "x-upstream": "yes" });
      res.write('{"id":"chatcmpl-1",');
      setTimeout(() => res.end('"object":"chat.completion","n":[1,2,3]}'), 20);
    };
    const response = await sendUpstream(agent, call());
    expect(response.statusCode).toBe(201);
    expect(response.headers["x-upstream"]).toBe("yes");
    expect(await response.body.json()).toEqual({ id: "chatcmpl-1", object: "chat.completion", n: [1, 2, 3] });
    expect(await response.body.text()).toBe('{"id":"chatcmpl-1","object":"chat.completion","n":[1,2,3]}');
    const pieces: Buffer[] = [];
    for await (const piece of response.body) pieces.push(piece);
    expect(Buffer.concat(pieces).toString()).toBe('{"id":"chatcmpl-1","object":"chat.completion","n":[1,2,3]}');
    expect(seen[0]).toMatchObject({ method: "POST", url: "/v1/chat/completions?trace=1", body: '{"model":"m","messages":[]}' });
    expect(seen[0]?.headers.authorization).toBe("Bearer sk-test");
  });

  it("when the upstream answers an error page, then it is read bounded like a streamed one", async () => {
    answer = (_req, res) => {
      res.writeHead(503, { "content-type": "text/plain" });
      res.end("x".repeat(100));
    };
    const response = await sendUpstream(agent, call());
    expect(response.statusCode).toBe(503);
    expect(await readBounded(response.body, 10)).toBe("x".repeat(10));
  });

  it("when an error answer's body stalls after its status, then the status and headers still come back", async () => {
    answer = (_req, res) => {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "3" });
      res.write('{"error":{"mess'); // and nothing more
    };
    const response = await sendUpstream(agent, call({ timeoutMs: 200 }));
    expect(response.statusCode).toBe(429);
    expect(response.headers["retry-after"]).toBe("3");
    expect(await response.body.text()).toBe('{"error":{"mess');
  });

  it("when an error page is huge, then only its first 64 KiB are kept and the rest is not waited for", async () => {
    answer = (_req, res) => {
      res.writeHead(502, { "content-type": "text/html" });
      res.write("e".repeat(70 * 1024)); // then it never ends
    };
    const response = await sendUpstream(agent, call());
    expect(response.statusCode).toBe(502);
    expect(await response.body.text()).toBe("e".repeat(64 * 1024));
  });

  it("when an informational answer comes before the real one, then the real status and the whole body count", async () => {
    answer = (_req, res) => {
      res.writeEarlyHints({ link: "</x>; rel=preload" });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ big: "b".repeat(100 * 1024) }));
    };
    const response = await sendUpstream(agent, call());
    expect(response.statusCode).toBe(200);
    expect(((await response.body.json()) as { big: string }).big).toHaveLength(100 * 1024);
  });

  it("when the answer starts with a UTF-8 byte order mark, then text() and json() skip it as undici's body does", async () => {
    answer = (_req, res) => res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"ok":true}')]));
    const response = await sendUpstream(agent, call());
    expect(await response.body.json()).toEqual({ ok: true });
    expect(await response.body.text()).toBe('{"ok":true}');
  });

  it("when the body is empty or not JSON, then json() throws a SyntaxError as undici's body does", async () => {
    answer = (_req, res) => res.end("<html>oops</html>");
    await expect((await sendUpstream(agent, call())).body.json()).rejects.toBeInstanceOf(SyntaxError);
    answer = (_req, res) => res.end();
    const empty = await sendUpstream(agent, call());
    await expect(empty.body.json()).rejects.toBeInstanceOf(SyntaxError);
    const pieces: Buffer[] = [];
    for await (const piece of empty.body) pieces.push(piece);
    expect(pieces).toEqual([]);
  });

  it("when the answer is larger than allowed, then the call fails with undici's size error and nothing is kept", async () => {
    answer = (_req, res) => {
      res.write("a".repeat(600));
      res.end("b".repeat(600));
    };
    const failed = sendUpstream(agent, call({ maxAnswerBytes: 1_000 }));
    await expect(failed).rejects.toMatchObject({ code: "UND_ERR_RES_EXCEEDED_MAX_SIZE" });
    answer = (_req, res) => res.end("a".repeat(1_000));
    expect(await (await sendUpstream(agent, call({ maxAnswerBytes: 1_000 }))).body.text()).toHaveLength(1_000);
  });

  it("when the caller goes away mid-call, then the call rejects with its reason and the upstream connection is closed", async () => {
    answer = () => {}; // never answers
    const gone = new CallerGone();
    const pending = sendUpstream(agent, call({ signal: gone }));
    await waitFor(() => seen.length === 1);
    const reason = new Error("caller left");
    gone.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await waitFor(() => seen[0]?.closedEarly === true);
    expect(gone.listenerCount("abort")).toBe(0);
  });

  it("when the caller's reason is not an Error, then the call rejects with it as request() does", async () => {
    answer = () => {};
    const controller = new AbortController();
    const pending = sendUpstream(agent, call({ signal: controller.signal }));
    await waitFor(() => seen.length === 1);
    controller.abort("bye");
    await expect(pending).rejects.toBe("bye");
  });

  it("when an AbortSignal fires mid-call, then the call is cancelled the same way", async () => {
    answer = () => {};
    const controller = new AbortController();
    const pending = sendUpstream(agent, call({ signal: controller.signal }));
    await waitFor(() => seen.length === 1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    await waitFor(() => seen[0]?.closedEarly === true);
  });

  it("when the caller is already gone, then the call rejects and no answer is awaited", async () => {
    answer = () => {};
    const gone = new CallerGone();
    gone.abort();
    await expect(sendUpstream(agent, call({ signal: gone }))).rejects.toMatchObject({ name: "AbortError" });
  });

  it("when the call completes, then it no longer listens to the caller", async () => {
    answer = (_req, res) => res.end("{}");
    const gone = new CallerGone();
    await sendUpstream(agent, call({ signal: gone }));
    expect(gone.listenerCount("abort")).toBe(0);
    gone.abort(); // nothing left to cancel: must not throw
  });

  it("when nothing listens on the upstream's port, then it rejects with the connection error's code", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expect(sendUpstream(agent, call({ url: `http://127.0.0.1:${port}/v1/x` }))).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });
});

describe("sendUpstream, streamed", () => {
  it("when not buffered, then it resolves at the headers with the body still to read, and a CallerGone cancels it", async () => {
    let res: ServerResponse | undefined;
    answer = (_req, r) => {
      res = r;
      r.writeHead(200, { "content-type": "text/event-stream" });
      r.write("data: 1\n\n");
    };
    const gone = new CallerGone();
    const response = await sendUpstream(agent, call({ buffered: false, signal: gone }));
    expect(response.statusCode).toBe(200);
    const first = await response.body[Symbol.asyncIterator]().next();
    expect(Buffer.from(first.value as Buffer).toString()).toBe("data: 1\n\n");
    expect(res?.writableEnded).toBe(false);
    gone.abort();
    await waitFor(() => seen[0]?.closedEarly === true);
  });
});

describe("defaultRetryPolicy.sleep", () => {
  it("when the caller goes away during the wait, then it ends at once; when the wait ends, then it stops listening", async () => {
    const gone = new CallerGone();
    const started = Date.now();
    const waiting = defaultRetryPolicy.sleep(10_000, gone);
    expect(gone.listenerCount("abort")).toBe(1);
    gone.abort();
    await waiting;
    expect(Date.now() - started).toBeLessThan(5_000);

    const other = new CallerGone();
    await defaultRetryPolicy.sleep(5, other);
    expect(other.listenerCount("abort")).toBe(0);
  });

  it("when the caller is already gone, then it does not wait", async () => {
    const gone = new CallerGone();
    gone.abort();
    const started = Date.now();
    await defaultRetryPolicy.sleep(10_000, gone);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
