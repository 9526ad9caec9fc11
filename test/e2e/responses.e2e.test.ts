import OpenAI from "openai";
import type { ResponseFunctionToolCall, ResponseInputItem, ResponseStreamEvent } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertOpenAI, type UpstreamEmulator } from "@gw/testkit";
import { startChatMesh, type ChatMesh } from "./chat-mesh";
import type { RunningMesh } from "./harness";

/**
 * The OpenAI Responses API for any chat model: the official `openai` client's `responses.create` and
 * `responses.stream` against an OpenAI-kind and an Anthropic-kind upstream, through the four
 * services, translated to chat completions (and on to Anthropic messages) on the way.
 */
const OPENAI_KEY = "sk-upstream-openai-responses";
const ANTHROPIC_KEY = "sk-ant-upstream-responses";

let mesh: ChatMesh;
let openaiUp: UpstreamEmulator;
let anthropicUp: UpstreamEmulator;
let gw: RunningMesh;
let key: string;

const weather = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
  strict: false,
};

beforeAll(async () => {
  mesh = await startChatMesh({ workspace: "responses", openaiKey: OPENAI_KEY, anthropicKey: ANTHROPIC_KEY });
  ({ openaiUp, anthropicUp, gw, key } = mesh);
}, 180_000);

afterAll(() => mesh?.stop());

const openai = () => new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });

for (const model of ["gpt-e2e", "claude-e2e"]) {
  describe(`when the openai client calls responses on ${model}`, () => {
    it("then responses.create answers with a Response the schema accepts, and output_text works", async () => {
      const response = await openai().responses.create({ model, instructions: "Be brief.", input: "hello there", max_output_tokens: 100, store: true });
      assertOpenAI("Response", JSON.parse(JSON.stringify({ ...response, output_text: undefined })));
      expect(response.output_text).toBe("Echo: hello there");
      expect(response).toMatchObject({
        object: "response",
        model,
        status: "completed",
        store: false,
        instructions: "Be brief.",
        max_output_tokens: 100,
        error: null,
      });
      expect(response.id).toMatch(/^resp_/);
      expect(response.output[0]).toMatchObject({ type: "message", role: "assistant", status: "completed" });
      expect(response.usage?.input_tokens).toBeGreaterThan(0);
      expect(response.usage?.output_tokens).toBeGreaterThan(0);
      expect(response.usage?.total_tokens).toBe((response.usage?.input_tokens ?? 0) + (response.usage?.output_tokens ?? 0));
    });

    it("then responses.stream yields text deltas, every event valid, and a final response with usage", async () => {
      const stream = openai().responses.stream({ model, input: [{ role: "user", content: [{ type: "input_text", text: "stream me" }] }] });
      const deltas: string[] = [];
      const seen: ResponseStreamEvent[] = [];
      stream.on("response.output_text.delta", (e) => deltas.push(e.delta));
      stream.on("event", (e) => seen.push(e));
      const final = await stream.finalResponse();
      expect(deltas.join("")).toBe("Echo: stream me");
      expect(final.output_text).toBe("Echo: stream me");
      expect(final).toMatchObject({ model, status: "completed" });
      expect(final.usage?.total_tokens).toBeGreaterThan(0);
      for (const event of seen) assertOpenAI("ResponseStreamEvent", event);
      expect(seen.map((e) => e.sequence_number)).toEqual(seen.map((_, i) => i));
      expect(seen.map((e) => e.type)).toEqual([
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        ...deltas.map(() => "response.output_text.delta"),
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
      ]);
    });

    it("then a function call round trip works: the call, then its output answered in text", async () => {
      const input: ResponseInputItem[] = [{ role: "user", content: "Paris" }];
      const first = await openai().responses.create({ model, input, tools: [weather], tool_choice: { type: "function", name: "get_weather" } });
      assertOpenAI("Response", JSON.parse(JSON.stringify({ ...first, output_text: undefined })));
      const call = first.output.find((o): o is ResponseFunctionToolCall => o.type === "function_call");
      expect(call).toMatchObject({ type: "function_call", name: "get_weather", status: "completed" });
      expect(call?.id).toMatch(/^fc_/);
      expect(typeof JSON.parse(call?.arguments ?? "")).toBe("object");
      expect(first.tools).toEqual([{ ...weather }]);
      expect(first.tool_choice).toEqual({ type: "function", name: "get_weather" });

      const second = await openai().responses.create({
        model,
        tools: [weather],
        input: [...input, ...first.output, { type: "function_call_output", call_id: call?.call_id ?? "", output: "sunny" }] as ResponseInputItem[],
      });
      expect(second.output_text).toBe("Echo: sunny");
      // The upstream saw the call and its result tied by the same id.
      const seen = JSON.stringify((model === "gpt-e2e" ? openaiUp : anthropicUp).requests.at(-1)?.body);
      expect(seen).toContain(model === "gpt-e2e" ? `"tool_call_id":"${call?.call_id}"` : `"tool_use_id":"${call?.call_id}"`);
    });

    it("then a streamed function call arrives whole, with the SDK's accumulated arguments", async () => {
      const stream = openai().responses.stream({ model, input: "Lyon", tools: [weather], tool_choice: "required" });
      const argDeltas: string[] = [];
      stream.on("response.function_call_arguments.delta", (e) => argDeltas.push(e.delta));
      const final = await stream.finalResponse();
      const call = final.output.find((o) => o.type === "function_call");
      expect(call).toMatchObject({ type: "function_call", name: "get_weather", status: "completed" });
      expect(argDeltas.join("")).toBe((call as ResponseFunctionToolCall).arguments);
      expect(final.output_text).toBe("");
    });
  });
}

describe("when the Responses request maps onto chat", () => {
  it("then the OpenAI upstream gets the chat equivalents of the Responses parameters", async () => {
    await openai().responses.create({
      model: "gpt-e2e",
      instructions: "Be brief.",
      input: "map me",
      max_output_tokens: 50,
      temperature: 0.5,
      text: { format: { type: "json_schema", name: "out", schema: { type: "object", properties: { echo: { type: "string" } } } } },
    });
    expect(openaiUp.requests.at(-1)?.body).toMatchObject({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "map me" },
      ],
      max_completion_tokens: 50,
      temperature: 0.5,
      response_format: { type: "json_schema", json_schema: { name: "out" } },
    });
  });
});

describe("when /v1/responses is asked for what it cannot do", () => {
  it("then previous_response_id is a 400 saying responses are not stored", async () => {
    await expect(openai().responses.create({ model: "gpt-e2e", input: "x", previous_response_id: "resp_abc" })).rejects.toMatchObject({
      status: 400,
      param: "previous_response_id",
      message: expect.stringMatching(/does not store responses/),
    });
  });

  it("then a built-in tool is a 400 naming it, and nothing reaches the upstream", async () => {
    const before = anthropicUp.requests.length;
    await expect(openai().responses.create({ model: "claude-e2e", input: "x", tools: [{ type: "web_search" }] })).rejects.toMatchObject({
      status: 400,
      param: "tools[0].type",
    });
    expect(anthropicUp.requests.length).toBe(before);
  });

  it("then a stream the upstream cuts ends with an error event and response.failed", async () => {
    openaiUp.script({ dropAfterChunks: 2 });
    const stream = await openai().responses.create({ model: "gpt-e2e", input: "cut me short", stream: true });
    const types: string[] = [];
    let failed: unknown;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.failed") failed = event.response;
    }
    expect(types.slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
    expect(types.slice(-2)).toEqual(["error", "response.failed"]);
    expect(failed).toMatchObject({ status: "failed", error: { code: "server_error" } });
  });
});
