import { ChatCompletion, ResponsesRequest } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { assertOpenAI } from "@gw/testkit";
import { describe, expect, it } from "vitest";
import { chatRequestToMessages } from "./requests";
import { chatCompletionToResponse, responseShell, responsesRequestToChat, responsesUsageOf, type IdMaker } from "./responses-api";

const parse = (body: Record<string, unknown>) => ResponsesRequest.parse({ model: "gw-model", ...body });
const toChat = (body: Record<string, unknown>) => responsesRequestToChat(parse(body)).chat;

/** The 400 a request gets, as {param, message}. */
function refusal(body: Record<string, unknown>): { param: string | null; message: string } {
  try {
    toChat(body);
  } catch (err) {
    if (err instanceof GatewayError) return { param: err.param, message: err.message };
    throw err;
  }
  throw new Error("expected a 400");
}

/** Ids counted per prefix, so whole answers can be compared. */
function countingIds(): IdMaker {
  const n: Record<string, number> = {};
  return (prefix) => {
    n[prefix] = (n[prefix] ?? 0) + 1;
    return `${prefix}_${n[prefix]}`;
  };
}

const weatherTool = {
  type: "function",
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: true,
};

describe("responsesRequestToChat", () => {
  it("when input is a string with instructions, then it is a system and a user message", () => {
    expect(toChat({ input: "hello", instructions: "Be brief." })).toEqual({
      model: "gw-model",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "hello" },
      ],
    });
  });

  it("when input is a list of items, then messages, calls and outputs become chat messages in order", () => {
    const chat = toChat({
      input: [
        { role: "developer", content: [{ type: "input_text", text: "Use tools." }] },
        {
          type: "message",
          role: "user",
          content: [
            { type: "input_text", text: "Paris?" },
            { type: "input_image", image_url: "https://x.test/a.png", detail: "low" },
          ],
        },
        { type: "message", role: "assistant", id: "msg_1", status: "completed", content: [{ type: "output_text", text: "Let me check.", annotations: [] }] },
        { type: "function_call", id: "fc_1", call_id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" },
        { type: "function_call", call_id: "call_b", name: "get_weather", arguments: '{"city":"Lyon"}' },
        { type: "function_call_output", call_id: "call_a", output: "sunny" },
        { type: "function_call_output", call_id: "call_b", output: [{ type: "input_text", text: "rain" }] },
        { role: "assistant", content: "Sunny in Paris, rain in Lyon." },
        { role: "user", content: "thanks" },
      ],
    });
    expect(chat.messages).toEqual([
      { role: "developer", content: [{ type: "text", text: "Use tools." }] },
      {
        role: "user",
        content: [
          { type: "text", text: "Paris?" },
          { type: "image_url", image_url: { url: "https://x.test/a.png", detail: "low" } },
        ],
      },
      {
        role: "assistant",
        content: "Let me check.",
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          { id: "call_b", type: "function", function: { name: "get_weather", arguments: '{"city":"Lyon"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "sunny" },
      { role: "tool", tool_call_id: "call_b", content: [{ type: "text", text: "rain" }] },
      { role: "assistant", content: "Sunny in Paris, rain in Lyon." },
      { role: "user", content: "thanks" },
    ]);
  });

  it("when a function call comes first, then it is an assistant message without content", () => {
    const chat = toChat({
      input: [
        { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "ok" },
      ],
    });
    expect(chat.messages[0]).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
    });
  });

  it("when the parameters have chat equivalents, then they are mapped", () => {
    const chat = toChat({
      input: "x",
      tools: [weatherTool, { type: "function", name: "noop", parameters: null, strict: null }],
      tool_choice: { type: "function", name: "get_weather" },
      parallel_tool_calls: false,
      max_output_tokens: 300,
      temperature: 0.2,
      top_p: 0.9,
      stream: true,
      store: true,
      metadata: { k: "v" },
      user: "u1",
      safety_identifier: "s1",
      prompt_cache_key: "pk",
      truncation: "auto",
      text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true }, verbosity: "low" },
      reasoning: { effort: "low", summary: "auto" },
      include: ["reasoning.encrypted_content"],
      service_tier: "flex",
      stream_options: { include_obfuscation: false },
      max_tool_calls: 3,
    });
    expect(chat).toEqual({
      model: "gw-model",
      messages: [{ role: "user", content: "x" }],
      tools: [
        { type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: weatherTool.parameters, strict: true } },
        { type: "function", function: { name: "noop" } },
      ],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      max_completion_tokens: 300,
      temperature: 0.2,
      top_p: 0.9,
      stream: true,
      response_format: { type: "json_schema", json_schema: { name: "out", schema: { type: "object" }, strict: true } },
      verbosity: "low",
      reasoning_effort: "low",
      user: "u1",
      safety_identifier: "s1",
      prompt_cache_key: "pk",
    });
  });

  it("when text.format is json_object or text, then response_format is json_object or absent", () => {
    expect(toChat({ input: "x", text: { format: { type: "json_object" } } }).response_format).toEqual({ type: "json_object" });
    expect(toChat({ input: "x", text: { format: { type: "text" }, verbosity: "medium" } })).toEqual({
      model: "gw-model",
      messages: [{ role: "user", content: "x" }],
    });
  });

  it("when tool_choice is allowed_tools, then only the listed functions are sent, with the mode", () => {
    const chat = toChat({
      input: "x",
      tools: [weatherTool, { type: "function", name: "other", parameters: {} }],
      tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "other" }] },
    });
    expect(chat.tools?.map((t) => t.function.name)).toEqual(["other"]);
    expect(chat.tool_choice).toBe("required");
  });

  it("when a file is sent as file_data, then it is a chat file part", () => {
    const chat = toChat({ input: [{ role: "user", content: [{ type: "input_file", filename: "a.pdf", file_data: "data:application/pdf;base64,AAAA" }] }] });
    expect(chat.messages[0]?.content).toEqual([{ type: "file", file: { file_data: "data:application/pdf;base64,AAAA", filename: "a.pdf" } }]);
  });

  it.each([
    [{ previous_response_id: "resp_1" }, "previous_response_id", /does not store responses/],
    [{ conversation: "conv_1" }, "conversation", /does not store responses/],
    [{ background: true }, "background", /background/],
    [{ prompt: { id: "pmpt_1" } }, "prompt", /prompt templates/],
    [{ top_logprobs: 2 }, "top_logprobs", /top_logprobs/],
    [{ include: ["message.output_text.logprobs"] }, "include", /logprobs/],
    [{ tools: [{ type: "web_search" }] }, "tools[0].type", /Built-in tools \("web_search"\)/],
    [{ tools: [weatherTool, { type: "file_search", vector_store_ids: ["v"] }] }, "tools[1].type", /Built-in tools/],
    [{ tools: [{ ...weatherTool, defer_loading: true }] }, "tools[0].defer_loading", /Deferred/],
    [{ tool_choice: { type: "web_search_preview" } }, "tool_choice", /not supported/],
    [
      { tools: [weatherTool], tool_choice: { type: "allowed_tools", mode: "auto", tools: [{ type: "function", name: "nope" }] } },
      "tool_choice.tools[0].name",
      /No function tool named "nope"/,
    ],
    [{ reasoning: { mode: "pro" } }, "reasoning.mode", /reasoning.mode/],
    [{ context_management: [{ type: "compaction" }] }, "context_management", /compaction/],
    [{ moderation: { model: "omni-moderation-latest" } }, "moderation", /moderation/],
  ])("when the request has %j, then it is a 400 naming %s", (extra, param, message) => {
    const got = refusal({ input: "x", ...extra });
    expect(got.param).toBe(param);
    expect(got.message).toMatch(message);
  });

  it.each([
    [[{ type: "item_reference", id: "msg_1" }], "input[0].type", /Item references/],
    [[{ type: "reasoning", id: "rs_1", summary: [] }], "input[0].type", /Reasoning items/],
    [[{ type: "web_search_call", id: "ws_1" }], "input[0].type", /web_search_call/],
    [[{ role: "user", content: [{ type: "input_image", file_id: "file_1", detail: "auto" }] }], "input[0].content[0].file_id", /file_id/],
    [[{ role: "user", content: [{ type: "input_file", file_url: "https://x.test/a.pdf" }] }], "input[0].content[0].file_url", /file_data/],
    [[{ role: "system", content: [{ type: "input_image", image_url: "https://x.test/a.png" }] }], "input[0].content[0].type", /only contain input_text/],
    [[{ role: "user", content: [{ type: "output_text", text: "x" }] }], "input[0].content[0].type", /output_text/],
    [
      [{ type: "function_call_output", call_id: "c", output: [{ type: "input_image", image_url: "https://x.test/a.png" }] }],
      "input[0].output[0].type",
      /input_text/,
    ],
    [[], "input", /at least one/],
  ])("when input is %j, then it is a 400 naming %s", (input, param, message) => {
    const got = refusal({ input });
    expect(got.param).toBe(param);
    expect(got.message).toMatch(message);
  });

  it("when a previous_response_id is null, then it is allowed (the SDK may send nulls)", () => {
    expect(() => toChat({ input: "x", previous_response_id: null, conversation: null, store: false })).not.toThrow();
  });
});

describe("inCallerTerms", () => {
  /** The chat ⇄ messages translation's 400 for this request, in Responses terms. */
  function anthropicRefusal(body: Record<string, unknown>): GatewayError {
    const { chat, inCallerTerms } = responsesRequestToChat(parse(body));
    try {
      chatRequestToMessages(chat, "claude-x");
    } catch (err) {
      if (err instanceof GatewayError) return inCallerTerms(err);
      throw err;
    }
    throw new Error("expected a 400");
  }

  it("when an Anthropic route refuses json_schema output, then the 400 names text.format", () => {
    const err = anthropicRefusal({ input: "x", text: { format: { type: "json_schema", name: "o", schema: {} } } });
    expect(err.param).toBe("text.format");
    expect(err.message).toMatch(/^text\.format json_object/);
    expect(err.status).toBe(400);
  });

  it("when an Anthropic route refuses reasoning or verbosity, then the 400 names reasoning.effort or text.verbosity", () => {
    expect(anthropicRefusal({ input: "x", reasoning: { effort: "high" } }).param).toBe("reasoning.effort");
    expect(anthropicRefusal({ input: "x", text: { verbosity: "high" } }).param).toBe("text.verbosity");
  });

  it("when a content part is refused, then the 400 names the input item and part", () => {
    const err = anthropicRefusal({
      input: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello" },
        {
          role: "user",
          content: [
            { type: "input_text", text: "read" },
            { type: "input_file", file_data: "data:text/plain;base64,AA", filename: "a.txt" },
          ],
        },
      ],
      instructions: "be nice",
    });
    expect(err.param).toBe("input[2].content[1].type");
  });

  it("when a temperature is out of Anthropic's range, then the name is unchanged", () => {
    expect(anthropicRefusal({ input: "x", temperature: 1.5 }).param).toBe("temperature");
  });

  it("when the error names a tool call or a tool, then the function_call item or tool is named", () => {
    const { inCallerTerms } = responsesRequestToChat(
      parse({
        input: [
          { role: "user", content: "x" },
          { type: "function_call", call_id: "c", name: "f", arguments: "{}" },
          { type: "function_call_output", call_id: "c", output: "o" },
        ],
        tools: [weatherTool, { type: "function", name: "f" }],
      }),
    );
    const name = (param: string) => inCallerTerms(new GatewayError("invalid_request", `bad ${param}`, { param })).param;
    expect(name("messages[1].tool_calls[0].function.arguments")).toBe("input[1].arguments");
    expect(name("messages[2].content")).toBe("input[2].output");
    expect(name("tools[1].function.name")).toBe("tools[1].name");
    expect(name("max_completion_tokens")).toBe("max_output_tokens");
    expect(inCallerTerms(new GatewayError("upstream_error", "down")).message).toBe("down");
  });
});

describe("chatCompletionToResponse", () => {
  const completion = (message: Record<string, unknown>, finishReason: string, usage?: Record<string, unknown>) =>
    ChatCompletion.parse({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "gw-model",
      choices: [{ index: 0, message: { role: "assistant", refusal: null, annotations: [], ...message }, logprobs: null, finish_reason: finishReason }],
      ...(usage ? { usage } : {}),
    });
  const usage = {
    prompt_tokens: 12,
    completion_tokens: 5,
    total_tokens: 17,
    prompt_tokens_details: { cached_tokens: 4 },
    completion_tokens_details: { reasoning_tokens: 2 },
  };

  it("when the answer is text, then it is one completed message, with every echo field the schema requires", () => {
    const request = parse({ input: "hi", instructions: "Be brief.", metadata: { a: "b" }, store: true });
    const out = chatCompletionToResponse(completion({ content: "Hello!" }, "stop", usage), responseShell(request, "resp_1", 100), countingIds(), 101);
    assertOpenAI("Response", out);
    expect(out).toMatchObject({
      id: "resp_1",
      object: "response",
      created_at: 100,
      completed_at: 101,
      status: "completed",
      error: null,
      incomplete_details: null,
      model: "gw-model",
      instructions: "Be brief.",
      store: false,
      previous_response_id: null,
      metadata: { a: "b" },
      tools: [],
      tool_choice: "auto",
      temperature: 1,
      top_p: 1,
      parallel_tool_calls: true,
      truncation: "disabled",
      text: { format: { type: "text" } },
      output: [
        {
          type: "message",
          id: "msg_1",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "Hello!", annotations: [], logprobs: [] }],
        },
      ],
      usage: {
        input_tokens: 12,
        input_tokens_details: { cached_tokens: 4, cache_write_tokens: 0 },
        output_tokens: 5,
        output_tokens_details: { reasoning_tokens: 2 },
        total_tokens: 17,
      },
    });
    expect(out).not.toHaveProperty("output_text");
  });

  it("when the answer calls tools, then each call is a function_call item with the chat call id", () => {
    const request = parse({ input: "Paris", tools: [weatherTool, { type: "function", name: "bare" }], tool_choice: "required" });
    const calls = [
      { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
      { id: "call_2", type: "function", function: { name: "bare", arguments: "{}" } },
    ];
    const out = chatCompletionToResponse(
      completion({ content: null, tool_calls: calls }, "tool_calls", usage),
      responseShell(request, "resp_2", 1),
      countingIds(),
      2,
    );
    assertOpenAI("Response", out);
    expect(out.output).toEqual([
      { type: "function_call", id: "fc_1", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" },
      { type: "function_call", id: "fc_2", call_id: "call_2", name: "bare", arguments: "{}", status: "completed" },
    ]);
    expect(out.tools).toEqual([{ ...weatherTool }, { type: "function", name: "bare", description: null, parameters: null, strict: false }]);
    expect(out.tool_choice).toBe("required");
  });

  it("when text comes with calls, then the message comes first", () => {
    const out = chatCompletionToResponse(
      completion({ content: "Checking.", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }] }, "tool_calls"),
      responseShell(parse({ input: "x" }), "resp_3"),
      countingIds(),
    );
    expect(out.output.map((o) => o.type)).toEqual(["message", "function_call"]);
    expect(out).not.toHaveProperty("usage");
  });

  it("when the answer was cut by the token limit, then it is incomplete, saying why", () => {
    const out = chatCompletionToResponse(
      completion({ content: "Hel" }, "length", usage),
      responseShell(parse({ input: "x", max_output_tokens: 1 }), "resp_4", 1),
      countingIds(),
    );
    assertOpenAI("Response", out);
    expect(out).toMatchObject({ status: "incomplete", completed_at: null, incomplete_details: { reason: "max_output_tokens" }, max_output_tokens: 1 });
    expect(out.output[0]).toMatchObject({ status: "incomplete" });
  });

  it("when the model refused, then the message holds a refusal part (and content_filter is incomplete)", () => {
    const refused = chatCompletionToResponse(
      completion({ content: null, refusal: "I can't." }, "stop"),
      responseShell(parse({ input: "x" }), "resp_5"),
      countingIds(),
    );
    assertOpenAI("Response", refused);
    expect(refused.output[0]).toMatchObject({ content: [{ type: "refusal", refusal: "I can't." }] });
    const filtered = chatCompletionToResponse(completion({ content: "" }, "content_filter"), responseShell(parse({ input: "x" }), "resp_6"), countingIds());
    expect(filtered).toMatchObject({ status: "incomplete", incomplete_details: { reason: "content_filter" } });
    expect(filtered.output[0]).toMatchObject({ content: [{ type: "output_text", text: "" }] });
  });

  it("when the request asked for structured output and sampling, then the echo says so", () => {
    const format = { type: "json_schema", name: "o", schema: { type: "object" }, strict: true };
    const request = parse({ input: "x", text: { format }, temperature: 0.3, top_p: 0.5, reasoning: { effort: "low" }, user: "u", parallel_tool_calls: false });
    const out = chatCompletionToResponse(completion({ content: "{}" }, "stop", usage), responseShell(request, "resp_7"), countingIds());
    assertOpenAI("Response", out);
    expect(out).toMatchObject({
      text: { format, verbosity: "medium" },
      temperature: 0.3,
      top_p: 0.5,
      reasoning: { effort: "low", summary: null },
      user: "u",
      parallel_tool_calls: false,
    });
  });
});

describe("responsesUsageOf", () => {
  it("when the chat usage has no details, then the details are zero", () => {
    expect(responsesUsageOf({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 })).toEqual({
      input_tokens: 3,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 4,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 7,
    });
  });
});
