import { PassThrough, Writable } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import { createLogger, requestLogger } from "./index";

function capture() {
  const destination = new PassThrough();
  const lines: Array<Record<string, unknown>> = [];
  destination.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  return { logger: createLogger({ service: "test", level: "debug", destination }), lines };
}

describe("requestLogger", () => {
  it("writes every line with the request id and the service, and redacts as its parent does", async () => {
    const { logger, lines } = capture();
    const log = requestLogger(logger, "req_1");
    log.info({ headers: { authorization: "Bearer sk-secret" } }, "first");
    log.child({ attempt: 2 }).warn("second");
    expect(log.isLevelEnabled("debug")).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toMatchObject([
      { service: "test", requestId: "req_1", msg: "first", headers: { authorization: "[redacted]" } },
      { service: "test", requestId: "req_1", attempt: 2, msg: "second" },
    ]);
  });

  it("makes its child only when the request first logs, and only once", () => {
    const { logger } = capture();
    const child = vi.spyOn(logger, "child");
    const log = requestLogger(logger, "req_2");
    expect(child).not.toHaveBeenCalled();
    log.info("one");
    log.info("two");
    expect(child).toHaveBeenCalledTimes(1);
    expect(child).toHaveBeenCalledWith({ requestId: "req_2" });
  });

  it("keeps a level set on it to itself", async () => {
    const { logger, lines } = capture();
    const log = requestLogger(logger, "req_3");
    log.level = "error";
    log.warn("dropped");
    logger.warn("kept");
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => l.msg)).toEqual(["kept"]);
  });
});

describe("createLogger's format", () => {
  function collect(): { stream: Writable; text: () => string } {
    let text = "";
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString();
        done();
      },
    });
    return { stream, text: () => text };
  }

  it("when lines are for a person, then they are pretty, one event per line with its fields, and still redacted", () => {
    const out = collect();
    const logger = createLogger({ service: "t", destination: out.stream, pretty: true, secrets: ["a-told-secret-0123456789"] });
    logger.info({ requestId: "req_1", headers: { "x-api-key": "k-0123456789" } }, "saw a-told-secret-0123456789");
    const text = out.text();
    expect(text.startsWith("{")).toBe(false);
    expect(text).toMatch(/INFO.*saw \[redacted\]/);
    expect(text).toContain('requestId: "req_1"');
    expect(text).not.toContain("a-told-secret-0123456789");
    expect(text).not.toContain("k-0123456789");
  });

  it("when lines are for a collector, then each is one JSON object", () => {
    const out = collect();
    createLogger({ service: "t", destination: out.stream }).info({ n: 1 }, "hello");
    expect(JSON.parse(out.text())).toMatchObject({ level: 30, service: "t", n: 1, msg: "hello" });
  });
});
