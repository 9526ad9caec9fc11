import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { otlpSpanKind, startOpenAIUpstream, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan, type UpstreamEmulator } from "@gw/testkit";
import { eventually } from "./harness";
import { newWorkspaceKey, startGatewayTarget, targetNames, testPlans, type GatewayTarget } from "./targets";

/**
 * Traces end to end, in both ways of running, exported to a stand-in OTLP collector: a caller's
 * `traceparent` is continued by ingress, carried to inference over HTTP and to the job workers over
 * the bus, with a span per hop and one per upstream attempt carrying the GenAI attributes.
 */
const KEYS = { oa: "sk-trace-oa", flaky: "sk-trace-flaky" };
let oa: UpstreamEmulator;
let flaky: UpstreamEmulator;
let receiver: OtlpReceiver;

beforeAll(async () => {
  oa = await startOpenAIUpstream({ apiKey: KEYS.oa });
  flaky = await startOpenAIUpstream({ apiKey: KEYS.flaky });
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await Promise.all([oa?.close(), flaky?.close(), receiver?.close()]);
});

const config = () => `
providers:
  oa:    { kind: openai, base_url: "${oa.url}",    api_key_env: TRACE_OA }
  flaky: { kind: openai, base_url: "${flaky.url}", api_key_env: TRACE_FLAKY, max_retries: 0 }
models:
  gpt:      { type: chat, routes: [{ provider: oa, model: gpt-4o-mini }] }
  fallback: { type: chat, routes: [{ provider: flaky, model: gpt-4o }, { provider: oa, model: gpt-4o-mini }] }
${testPlans}`;
const env = { TRACE_OA: KEYS.oa, TRACE_FLAKY: KEYS.flaky };

/** A caller's own trace: a new trace id and the caller's span id, as its W3C header. */
function callerTrace(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString("hex");
  const spanId = randomBytes(8).toString("hex");
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

const inTrace = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
/** A span's children of one kind, in the order they started. */
const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan | undefined, kind: number) =>
  spans
    .filter((s) => parent !== undefined && s.parentSpanId === parent.spanId && s.kind === kind)
    .sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)));

for (const name of targetNames) {
  describe(`when calls go through ${name} with OTEL_EXPORTER_OTLP_ENDPOINT set`, () => {
    let gw: GatewayTarget;
    let key: string;
    const service = (mesh: string) => (name === "the mesh" ? mesh : "gateway");

    beforeAll(async () => {
      gw = await startGatewayTarget(name, config(), { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "100" });
      ({ key } = await newWorkspaceKey(gw, { name: "traces", models: ["*"] }));
    }, 180_000);
    afterAll(async () => {
      await gw?.stop();
      oa.reset();
      flaky.reset();
    });

    const post = (path: string, body: unknown, traceparent: string) =>
      fetch(`${gw.baseURL}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", traceparent },
        body: JSON.stringify(body),
      });

    it("then a chat completion's spans continue the caller's trace: ingress → inference → the upstream attempt, with gen_ai attributes", async () => {
      const caller = callerTrace();
      const res = await post("/chat/completions", { model: "gpt", messages: [{ role: "user", content: "trace me" }] }, caller.traceparent);
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
      const requestId = res.headers.get("x-request-id");

      await receiver.waitFor(() => inTrace(caller.traceId).some((s) => s.kind === otlpSpanKind.client));
      // The ingress span ends when its answer has gone, a moment after the others.
      const spans = await eventually(() => {
        const all = inTrace(caller.traceId);
        return all.some((s) => s.parentSpanId === caller.spanId) ? all : undefined;
      });
      const ingress = spans.find((s) => s.parentSpanId === caller.spanId);
      expect(ingress).toMatchObject({
        kind: otlpSpanKind.server,
        name: "POST /v1/chat/completions",
        service: service("ingress"),
        attributes: { "http.request.method": "POST", "http.route": "/v1/chat/completions", "http.response.status_code": 200, "gw.request_id": requestId },
      });
      const [inference, ...otherServers] = childrenOf(spans, ingress, otlpSpanKind.server);
      expect(otherServers).toEqual([]);
      expect(inference).toMatchObject({
        name: "POST /v1/chat/completions",
        service: service("inference"),
        attributes: { "http.route": "/v1/chat/completions", "http.response.status_code": 200, "gw.request_id": requestId },
      });
      const [attempt, ...otherAttempts] = childrenOf(spans, inference, otlpSpanKind.client);
      expect(otherAttempts).toEqual([]);
      expect(attempt).toMatchObject({
        name: "chat gpt",
        statusCode: 0,
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": "oa",
          "gen_ai.request.model": "gpt",
          "gen_ai.response.model": "gpt-4o-mini",
          "gen_ai.usage.input_tokens": answer.usage.prompt_tokens,
          "gen_ai.usage.output_tokens": answer.usage.completion_tokens,
        },
      });
      // The provider got the attempt's own context, and no span of this trace was left unparented.
      expect(oa.requests.at(-1)?.headers.traceparent).toBe(`00-${caller.traceId}-${attempt?.spanId}-01`);
      expect(spans.filter((s) => s !== ingress && !spans.some((p) => p.spanId === s.parentSpanId))).toEqual([]);
      expect(receiver.refused).toBe(0);
    });

    it("then a fallback shows one span per upstream attempt, the failed one with error.type", async () => {
      const caller = callerTrace();
      flaky.script({ status: 503 });
      const res = await post("/chat/completions", { model: "fallback", messages: [{ role: "user", content: "fall back" }] }, caller.traceparent);
      expect(res.status).toBe(200);
      // Both attempts, and the inference span over them (which ends after them, so may be exported later).
      const spans = await receiver.waitFor(() => {
        const all = inTrace(caller.traceId);
        const servers = all.filter((s) => s.kind === otlpSpanKind.server && s.service === service("inference") && s.parentSpanId !== caller.spanId);
        return all.filter((s) => s.kind === otlpSpanKind.client).length === 2 && servers.length > 0;
      });
      const inference = inTrace(caller.traceId).find(
        (s) => s.kind === otlpSpanKind.server && s.service === service("inference") && s.parentSpanId !== caller.spanId,
      );
      const attempts = childrenOf(spans, inference, otlpSpanKind.client);
      expect(attempts.map((a) => [a.name, a.attributes["gen_ai.provider.name"], a.statusCode])).toEqual([
        ["chat fallback", "flaky", 2],
        ["chat fallback", "oa", 0],
      ]);
      expect(attempts[0]?.attributes["error.type"]).toEqual(expect.any(String));
      expect(attempts[1]?.attributes["gen_ai.response.model"]).toBe("gpt-4o-mini");
    });

    it("then an async job's work continues the creating request's trace through the bus, and so do its events", async () => {
      const caller = callerTrace();
      const res = await post("/async/chat/completions", { model: "gpt", messages: [{ role: "user", content: "trace my job" }] }, caller.traceparent);
      expect(res.status).toBe(202);
      const job = (await res.json()) as { id: string };
      const requestId = res.headers.get("x-request-id");
      // Every span asserted below, each process exporting on its own schedule.
      const spans = await receiver.waitFor(() => {
        const all = inTrace(caller.traceId);
        return (
          all.some((s) => s.parentSpanId === caller.spanId) &&
          all.some((s) => s.kind === otlpSpanKind.server && s.service === service("jobs")) &&
          all.some((s) => s.name === "process jobs.work.inference") &&
          all.some((s) => s.kind === otlpSpanKind.client) &&
          all.some((s) => s.name === "process jobs.events")
        );
      });
      const ingress = spans.find((s) => s.parentSpanId === caller.spanId);
      expect(ingress).toMatchObject({ kind: otlpSpanKind.server, name: "POST /v1/async", service: service("ingress") });
      const [jobs] = childrenOf(spans, ingress, otlpSpanKind.server);
      expect(jobs).toMatchObject({ name: "POST /v1/async", service: service("jobs") });
      const [work] = childrenOf(spans, jobs, otlpSpanKind.consumer);
      expect(work).toMatchObject({
        name: "process jobs.work.inference",
        service: service("inference"),
        attributes: { "messaging.destination.name": "jobs.work.inference", "messaging.consumer.group.name": "inference", "gw.request_id": requestId },
      });
      // The worker runs the route's handler in-process: the upstream attempt sits under the message's span.
      const [attempt] = childrenOf(spans, work, otlpSpanKind.client);
      expect(attempt).toMatchObject({ name: "chat gpt", attributes: { "gen_ai.provider.name": "oa", "gen_ai.response.model": "gpt-4o-mini" } });
      const events = childrenOf(spans, work, otlpSpanKind.consumer);
      expect(events.length).toBeGreaterThan(0);
      expect(events.every((e) => e.name === "process jobs.events" && e.service === service("jobs"))).toBe(true);
      // The job is done, and its polls (no traceparent sent) are traces of their own.
      const done = await eventually(async () => {
        const poll = await fetch(`${gw.baseURL}/async/chat/completions/${job.id}`, { headers: { authorization: `Bearer ${key}` } });
        const body = (await poll.json()) as { status: string };
        return body.status === "completed" ? body : undefined;
      }, 30_000);
      expect(done.status).toBe("completed");
    });
  });
}
