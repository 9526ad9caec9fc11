import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { context, trace } from "@opentelemetry/api";
import { otlpSpanKind, startOtlpReceiver, type OtlpReceiver } from "@gw/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  busWithTraceContext,
  startGenAiAttemptSpan,
  startHttpServerSpan,
  startTracing,
  traceHeaders,
  tracingEnabled,
  untilStreamEnds,
  withConsumerSpan,
  type Tracing,
} from "./index";

const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
const callerSpan = "00f067aa0ba902b7";

/**
 * A request through a plain HTTP server using the same pieces the gateway's services use: the
 * server span, an upstream attempt made once the body has arrived (in a body event, as body parsers
 * do), a message published with the request's context and consumed in a CONSUMER span.
 */
describe("tracing with an OTLP endpoint", () => {
  let receiver: OtlpReceiver;
  let tracing: Tracing;
  let server: Server;
  const seen: { upstreamHeaders?: Record<string, string>; published?: Record<string, string> } = {};

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracing = await startTracing({ serviceName: "unit", env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50" } });
    server = createServer((req, res) => {
      const span = startHttpServerSpan(req, "req_unit");
      res.once("close", () => span.end(res.statusCode, "/v1/chat/completions"));
      span.run(req, () => {
        const parts: Buffer[] = [];
        req.on("data", (chunk: Buffer) => parts.push(chunk));
        req.on("end", () => void answer(res, Buffer.concat(parts).toString()));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  });

  afterAll(async () => {
    await tracing?.shutdown();
    await new Promise((resolve) => server?.close(resolve));
    await receiver?.close();
  });

  async function answer(res: import("node:http").ServerResponse, body: string): Promise<void> {
    const attempt = startGenAiAttemptSpan({
      operation: "chat",
      provider: "oa",
      requestModel: body,
      upstreamModel: "gpt-4o-mini-2024-07-18",
      baseUrl: "https://api.example.com/v1",
    });
    // As an adapter does: the upstream call is made (after an await) inside the attempt's run.
    const events = await attempt.run(async () => {
      await Promise.resolve();
      seen.upstreamHeaders = traceHeaders();
      return ["first", "second"];
    });
    for await (const _ of untilStreamEnds(toAsync(events), () => attempt.end({ usage: { input_tokens: 12, output_tokens: 3 } }))) {
      // drained, as a relayed stream is
    }
    const bus = {
      durable: false,
      async enqueue(_subject: string, _message: unknown, opts: { msgId: string; headers?: Record<string, string> }) {
        seen.published = opts.headers;
      },
    };
    await busWithTraceContext(bus).enqueue("jobs.work.inference", {}, { msgId: "m1", headers: { "x-request-id": "req_unit" } });
    await withConsumerSpan({ bus, subject: "jobs.work.inference", group: "inference", meta: { headers: seen.published ?? {}, deliveryCount: 2 } }, async () => {
      expect(trace.getSpan(context.active())?.isRecording()).toBe(true);
    });
    res.writeHead(200).end("ok");
  }

  async function* toAsync<E>(items: E[]): AsyncIterable<E> {
    yield* items;
  }

  it("when a request comes with a traceparent, then its server span, the attempt and the consumer continue that trace, parent to child", async () => {
    expect(tracingEnabled()).toBe(true);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${server.address() ? `http://127.0.0.1:${(server.address() as AddressInfo).port}` : ""}/v1/chat/completions?raw=path`, {
        method: "POST",
        headers: { traceparent: `00-${callerTrace}-${callerSpan}-01`, tracestate: "vendor=1" },
      });
      req.on("response", (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
      req.end("gpt-4o-mini");
    });
    expect(status).toBe(200);
    const spans = await receiver.waitFor((all) => all.length >= 3);
    expect(receiver.refused).toBe(0);
    const serverSpan = spans.find((s) => s.kind === otlpSpanKind.server);
    const attemptSpan = spans.find((s) => s.kind === otlpSpanKind.client);
    const consumerSpan = spans.find((s) => s.kind === otlpSpanKind.consumer);
    for (const span of [serverSpan, attemptSpan, consumerSpan]) {
      expect(span?.traceId).toBe(callerTrace);
      expect(span?.service).toBe("unit");
    }
    expect(serverSpan).toMatchObject({
      name: "POST /v1/chat/completions",
      parentSpanId: callerSpan,
      attributes: { "http.request.method": "POST", "http.route": "/v1/chat/completions", "http.response.status_code": 200, "gw.request_id": "req_unit" },
    });
    expect(attemptSpan).toMatchObject({
      name: "chat gpt-4o-mini",
      parentSpanId: serverSpan?.spanId,
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "oa",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 3,
        "server.address": "api.example.com",
        "server.port": 443,
      },
    });
    // The upstream request carries the attempt's own context; the message carries the request's.
    expect(seen.upstreamHeaders?.traceparent).toBe(`00-${callerTrace}-${attemptSpan?.spanId}-01`);
    expect(seen.upstreamHeaders?.tracestate).toBe("vendor=1");
    expect(seen.published).toMatchObject({ traceparent: `00-${callerTrace}-${serverSpan?.spanId}-01`, "x-request-id": "req_unit" });
    expect(consumerSpan).toMatchObject({
      name: "process jobs.work.inference",
      parentSpanId: serverSpan?.spanId,
      attributes: {
        "messaging.destination.name": "jobs.work.inference",
        "messaging.consumer.group.name": "inference",
        "gw.delivery_count": 2,
        "gw.request_id": "req_unit",
      },
    });
    expect(JSON.stringify(spans)).not.toContain("raw=path");
  });

  it("when an attempt fails, then its span says so with error.type", async () => {
    const attempt = startGenAiAttemptSpan({ operation: "embeddings", provider: "co", requestModel: "embed", upstreamModel: "embed-v4" });
    attempt.end({ errorType: "upstream_rate_limited", errorMessage: "429 from the provider" });
    attempt.end({}); // a second end is ignored
    const spans = await receiver.waitFor((all) => all.some((s) => s.name === "embeddings embed"));
    const failed = spans.filter((s) => s.name === "embeddings embed");
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ statusCode: 2, attributes: { "error.type": "upstream_rate_limited" } });
    expect(failed[0]?.attributes["gen_ai.response.model"]).toBeUndefined();
  });

  it("when tracing is shut down, then what was queued is exported and the API is a no-op again", async () => {
    const attempt = startGenAiAttemptSpan({ operation: "chat", provider: "oa", requestModel: "last", upstreamModel: "m" });
    attempt.end({});
    await tracing.shutdown();
    expect(receiver.spans.some((s) => s.name === "chat last")).toBe(true);
    expect(tracingEnabled()).toBe(false);
    expect(trace.getTracer("after").startSpan("x").isRecording()).toBe(false);
  });
});
