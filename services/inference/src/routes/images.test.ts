import { assertOpenAI, startOpenAIUpstream, TINY_PNG_BASE64, type UpstreamEmulator } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { reportedTokens, startRouteTestService, type RouteTestService } from "./route-test-service";

const UPSTREAM_KEY = "sk-images-route-upstream";
let upstream: UpstreamEmulator;
let service: RouteTestService;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
  service = await startRouteTestService({
    upstreams: { up: { kind: "openai", url: upstream.url, key: UPSTREAM_KEY } },
    models: { "image-local": { type: "image", provider: "up", model: "gpt-image-1" }, "dalle-local": { type: "image", provider: "up", model: "dall-e-3" } },
  });
});
afterAll(async () => {
  await service?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

const post = (body: unknown) => service.post("/v1/images/generations", body);

describe("POST /v1/images/generations", () => {
  it("when a GPT image model answers, then the JSON passes through and its total_tokens is reported", async () => {
    const answer = await post({ model: "image-local", prompt: "a red fox", n: 2, size: "1024x1024" });
    expect(answer.status).toBe(200);
    const body = JSON.parse(answer.text) as { data: { b64_json: string }[]; usage: { total_tokens: number } };
    assertOpenAI("ImagesResponse", body);
    expect(body.data.map((d) => d.b64_json)).toEqual([TINY_PNG_BASE64, TINY_PNG_BASE64]);
    expect(reportedTokens(answer.headers)).toBe(String(body.usage.total_tokens));
    const sent = upstream.requests.at(-1);
    expect(sent?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(sent?.body).toEqual({ model: "gpt-image-1", prompt: "a red fox", n: 2, size: "1024x1024" });
  });

  it("when a DALL·E model answers without usage, then nothing is reported", async () => {
    const answer = await post({ model: "dalle-local", prompt: "a red fox" });
    expect(answer.status).toBe(200);
    assertOpenAI("ImagesResponse", JSON.parse(answer.text));
    expect(reportedTokens(answer.headers)).toBeUndefined();
  });

  it("when streamed, then the named events are relayed as they came and the usage goes in the trailer", async () => {
    const answer = await post({ model: "image-local", prompt: "a fox", stream: true, partial_images: 1 });
    expect(answer.status).toBe(200);
    expect(answer.headers["content-type"]).toMatch(/^text\/event-stream/);
    const events = answer.text.split("\n\n").filter(Boolean);
    expect(events.map((e) => e.split("\n")[0])).toEqual(["event: image_generation.partial_image", "event: image_generation.completed"]);
    const completed = JSON.parse(events[1]!.split("\n")[1]!.slice("data: ".length)) as { usage: { total_tokens: number } };
    assertOpenAI("ImageGenCompletedEvent", completed);
    expect(reportedTokens(answer.trailers)).toBe(String(completed.usage.total_tokens));
  });

  it.each([
    [{ model: "image-local" }, "prompt"],
    [{ model: "image-local", prompt: "x", n: 11 }, "n"],
    [{ model: "image-local", prompt: "x", response_format: "gif" }, "response_format"],
  ])("when the body is %j, then a 400 names %s", async (body, param) => {
    const answer = await post(body);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { param } });
    expect(upstream.requests).toHaveLength(0);
  });

  it("when the upstream refuses the request, then its 400 comes back with the public model name", async () => {
    upstream.script({ status: 400, body: { error: { message: "gpt-image-1 cannot draw that", type: "invalid_request_error", param: null, code: null } } });
    const answer = await post({ model: "image-local", prompt: "x" });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { message: "image-local cannot draw that" } });
  });
});
