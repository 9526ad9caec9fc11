import { Agent, createServer, request, type IncomingMessage, type RequestListener } from "node:http";
import { connect } from "node:net";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { startHttpServer, type RunningServer } from "./server";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(handler: RequestListener): Promise<RunningServer> {
  const server = await startHttpServer(handler, 0, "127.0.0.1");
  cleanups.push(() => server.close(100));
  return server;
}

function keepAliveAgent(): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  cleanups.push(() => agent.destroy());
  return agent;
}

/** GET with node:http so the test controls connection reuse (fetch's pool would hide it). */
function get(url: string, agent: Agent | false): Promise<{ status: number; body: string; endedAt: number }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res: IncomingMessage) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, endedAt: Date.now() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("startHttpServer", () => {
  it("when started on port 0, then it reports the bound port and a URL that answers", async () => {
    const server = await start((_req, res) => res.end("hello"));
    expect(server.port).toBeGreaterThan(0);
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    expect((await get(`${server.url}/`, false)).body).toBe("hello");
  });

  it("when bound to 0.0.0.0, then the shown URL uses 127.0.0.1", async () => {
    const server = await startHttpServer((_req, res) => res.end("x"), 0, "0.0.0.0");
    cleanups.push(() => server.close(100));
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
  });

  it("when the port is taken, then start rejects", async () => {
    const first = await start((_req, res) => res.end());
    await expect(startHttpServer((_req, res) => res.end(), first.port, "127.0.0.1")).rejects.toThrow(/EADDRINUSE/);
  });
});

describe("startHttpServer with an express app", () => {
  function sampleApp() {
    const app = express();
    app.use(express.json());
    app.post("/echo/:id", (req, res) => {
      res.locals.seen = req.get("x-note");
      res
        .status(201)
        .set("x-route", req.params.id)
        .json({ body: req.body as unknown, isJson: req.is("application/json"), app: req.app === app, note: res.locals.seen as unknown });
    });
    return app;
  }

  function post(url: string): Promise<{ status: number; route: string | undefined; body: unknown }> {
    return new Promise((resolve, reject) => {
      const req = request(url, { method: "POST", agent: false, headers: { "content-type": "application/json", "x-note": "hi" } }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, route: res.headers["x-route"] as string | undefined, body: JSON.parse(text) as unknown }));
      });
      req.on("error", reject);
      req.end(JSON.stringify({ a: 1 }));
    });
  }

  it("when a request arrives, then it is built on the app's own prototypes, so express has none to swap", async () => {
    const app = sampleApp();
    const server = await start(app);
    const seen: { request: boolean; response: boolean }[] = [];
    // Prepended, so it runs before express sees the request: the prototypes node built them with.
    server.server.prependListener("request", (req, res) => {
      seen.push({ request: Object.getPrototypeOf(req) === app.request, response: Object.getPrototypeOf(res) === app.response });
    });
    expect(await post(`${server.url}/echo/7`)).toEqual({
      status: 201,
      route: "7",
      body: { body: { a: 1 }, isJson: "application/json", app: true, note: "hi" },
    });
    expect(seen).toEqual([{ request: true, response: true }]);
  });

  it("when the same app is served twice, then the second server's objects are its own classes' and express's methods work", async () => {
    const app = sampleApp();
    await start(app);
    const second = await start(app);
    const seen: boolean[] = [];
    second.server.prependListener("request", (req, res) => {
      const made = (o: object) => (o.constructor as { prototype: unknown }).prototype === Object.getPrototypeOf(o);
      seen.push(made(req) && made(res) && Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response);
    });
    expect(await post(`${second.url}/echo/9`)).toEqual({
      status: 201,
      route: "9",
      body: { body: { a: 1 }, isJson: "application/json", app: true, note: "hi" },
    });
    expect(seen).toEqual([true]);
  });

  it("when the same app is also served by a plain node server, then express's methods still work there", async () => {
    const app = sampleApp();
    await start(app);
    const plain = await new Promise<import("node:http").Server>((resolve) => {
      const s = createServer(app).listen(0, "127.0.0.1", () => resolve(s));
    });
    cleanups.push(() => new Promise<void>((resolve) => plain.close(() => resolve())));
    const { port } = plain.address() as import("node:net").AddressInfo;
    expect(await post(`http://127.0.0.1:${port}/echo/8`)).toEqual({
      status: 201,
      route: "8",
      body: { body: { a: 1 }, isJson: "application/json", app: true, note: "hi" },
    });
  });
});

describe("RunningServer.close", () => {
  it("when a slow response is in flight, then close waits for it to finish and then resolves", async () => {
    const arrived = deferred();
    let finishedAt = 0;
    const server = await start((req, res) => {
      if (req.url === "/slow") {
        arrived.resolve();
        res.on("finish", () => (finishedAt = Date.now()));
        res.write("part-1;");
        setTimeout(() => res.end("part-2"), 300);
        return;
      }
      res.end("fast");
    });
    const agent = keepAliveAgent();
    const response = get(`${server.url}/slow`, agent);
    await arrived.promise;

    let closedAt = 0;
    const closing = server.close(10_000).then(() => (closedAt = Date.now()));
    await new Promise((r) => setTimeout(r, 50));
    expect(closedAt).toBe(0); // still waiting for the in-flight response

    const done = await response;
    expect(done).toMatchObject({ status: 200, body: "part-1;part-2" });
    await closing;
    expect(finishedAt).toBeGreaterThan(0);
    expect(closedAt).toBeGreaterThanOrEqual(finishedAt);
    // The keep-alive socket went idle after the response; it must not hold close() for long.
    expect(closedAt - finishedAt).toBeLessThan(1_500);
  });

  it("when close has begun, then new connections are refused while the in-flight request finishes", async () => {
    const arrived = deferred();
    const server = await start((req, res) => {
      if (req.url === "/slow") {
        arrived.resolve();
        setTimeout(() => res.end("slow-done"), 200);
        return;
      }
      res.end("fast");
    });
    const slow = get(`${server.url}/slow`, false);
    await arrived.promise;
    const closing = server.close(10_000);
    await expect(get(`${server.url}/fast`, false)).rejects.toThrow(/ECONNREFUSED|ECONNRESET/);
    expect((await slow).body).toBe("slow-done");
    await closing;
  });

  it("when only idle keep-alive sockets remain, then close resolves at once instead of waiting for their timeout", async () => {
    const server = await start((_req, res) => res.end("ok"));
    const agent = keepAliveAgent();
    expect((await get(`${server.url}/`, agent)).body).toBe("ok");
    // the client really holds an idle keep-alive socket to the server
    const idleSockets = Object.values(agent.freeSockets).reduce((n, list) => n + (list?.length ?? 0), 0);
    expect(idleSockets).toBe(1);

    const started = Date.now();
    await server.close(10_000);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(server.server.listening).toBe(false);
  });

  it("when a stream outlives the grace period, then close cuts it and resolves soon after graceMs", async () => {
    const arrived = deferred();
    const server = await start((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: first\n\n");
      arrived.resolve();
      // never ends on its own
    });
    const stream = get(`${server.url}/stream`, false);
    stream.catch(() => {}); // the cut surfaces as an aborted response
    await arrived.promise;
    const started = Date.now();
    await server.close(200);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(150);
    expect(took).toBeLessThan(2_000);
    await expect(stream).rejects.toThrow();
  });

  it("when close is called again while the first close is still draining, then the second call also waits for the drain", async () => {
    const arrived = deferred();
    let finishedAt = 0;
    const server = await start((_req, res) => {
      arrived.resolve();
      res.on("finish", () => (finishedAt = Date.now()));
      setTimeout(() => res.end("done"), 300);
    });
    const response = get(`${server.url}/slow`, false);
    await arrived.promise;
    const first = server.close(10_000);
    let secondResolvedAt = 0;
    const second = server.close(10_000).then(() => (secondResolvedAt = Date.now()));
    expect((await response).body).toBe("done");
    await Promise.all([first, second]);
    expect(finishedAt).toBeGreaterThan(0);
    expect(secondResolvedAt).toBeGreaterThanOrEqual(finishedAt);
  });

  it("when close is called twice, then the second call resolves too", async () => {
    const server = await start((_req, res) => res.end());
    await server.close(100);
    await expect(server.close(100)).resolves.toBeUndefined();
  });
});

describe("startHttpServer's limits on what a client sends", () => {
  /** Opens a raw connection, writes `text`, and resolves with what the server wrote before closing it. */
  function rawExchange(port: number, text: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => socket.write(text));
      let got = "";
      socket.on("data", (d: Buffer) => (got += d.toString()));
      socket.on("close", () => resolve(got));
      socket.on("error", reject);
    });
  }

  it("when the defaults are read, then headers, whole requests and idle keep-alives are all bounded", async () => {
    const server = await start((_req, res) => res.end());
    expect(server.server.headersTimeout).toBeGreaterThan(0);
    expect(server.server.requestTimeout).toBeGreaterThan(server.server.headersTimeout);
    expect(server.server.keepAliveTimeout).toBeGreaterThan(60_000);
  });

  it("when a body trickles in past the request limit, then the server answers 408 and closes instead of waiting for ever", async () => {
    let handled = false;
    const server = await startHttpServer(
      (req, res) => {
        handled = true;
        req.on("end", () => res.end("read"));
        req.resume();
      },
      0,
      "127.0.0.1",
      { timeouts: { requestTimeout: 400, headersTimeout: 300, connectionsCheckingInterval: 50 } },
    );
    cleanups.push(() => server.close(100));
    const answer = await rawExchange(server.port, "POST /x HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\nabc");
    expect(handled).toBe(true);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it("when an answer streams for longer than the request limit, then it is not cut: the limit is on what the client sends", async () => {
    const server = await startHttpServer(
      (_req, res) => {
        let n = 0;
        const tick = setInterval(() => {
          res.write(`${n++}\n`);
          if (n === 8) {
            clearInterval(tick);
            res.end();
          }
        }, 100);
      },
      0,
      "127.0.0.1",
      { timeouts: { requestTimeout: 300, headersTimeout: 200, connectionsCheckingInterval: 50 } },
    );
    cleanups.push(() => server.close(100));
    const answer = await get(`${server.url}/stream`, false);
    expect(answer.status).toBe(200);
    expect(answer.body.split("\n").filter(Boolean)).toHaveLength(8);
  });

  it("when headers trickle in past the header limit, then the connection is closed with a 408", async () => {
    const server = await startHttpServer((_req, res) => res.end(), 0, "127.0.0.1", {
      timeouts: { requestTimeout: 400, headersTimeout: 300, connectionsCheckingInterval: 50 },
    });
    cleanups.push(() => server.close(100));
    const answer = await rawExchange(server.port, "GET /x HTTP/1.1\r\nhost: x\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });
});

describe("startHttpServer when node's parser refuses a request", () => {
  function raw(port: number, text: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => socket.write(text));
      let got = "";
      socket.on("data", (d: Buffer) => (got += d.toString("latin1")));
      socket.on("close", () => resolve(got));
      socket.on("error", reject);
    });
  }
  const cases: [string, string, number][] = [
    ["an unknown method", "FUZZ /v1/models HTTP/1.1\r\nhost: x\r\n\r\n", 400],
    ["a lower-case method", "get /v1/models HTTP/1.1\r\nhost: x\r\n\r\n", 400],
    ["raw bytes a request line may not hold", "GET /v1/models/job_\x7f\x01 HTTP/1.1\r\nhost: x\r\n\r\n", 400],
    ["a request line over 16 KiB", `GET /v1/${"a".repeat(20_000)} HTTP/1.1\r\nhost: x\r\n\r\n`, 431],
  ];
  it("when the request line names /v1/messages, then the refusal is in Anthropic's envelope, as on that route", async () => {
    const server = await start((_req, res) => res.end("reached the app"));
    for (const line of ["G3T /v1/messages HTTP/1.1", "GET /v1/async/messages/job_\xff\xfe HTTP/1.1"]) {
      const answer = await raw(server.port, `${line}\r\nhost: x\r\n\r\n`);
      expect(answer, line).toMatch(/^HTTP\/1\.1 400 /);
      const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { type: string; error: { type: string }; request_id: string };
      expect(body, line).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
      expect(answer).toContain(`x-request-id: ${body.request_id}`);
    }
  });

  for (const [what, text, status] of cases) {
    it(`when it sends ${what}, then the answer is a ${status} in the OpenAI envelope with a request id`, async () => {
      const server = await start((_req, res) => res.end("reached the app"));
      const answer = await raw(server.port, text);
      expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(answer).toMatch(/\r\nx-request-id: req_[0-9a-f]{32}\r\n/);
      const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { error: { type: string; code: string } };
      expect(body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_request" });
    });
  }
});
