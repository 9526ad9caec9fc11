import { ChatCompletionRequest, MessagesRequest } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { assertOpenAI } from "@gw/testkit";
import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_TOKENS, PLACEHOLDER_TOOL, chatRequestToMessages, messagesRequestToChat } from "./requests";

const UP = "claude-up-1";

/** Builds a chat request from plain JSON through the contract, as the route would. */
const chat = (body: Record<string, unknown>): ChatCompletionRequest => ChatCompletionRequest.parse({ model: "public", ...body });
const msgs = (body: Record<string, unknown>): MessagesRequest => MessagesRequest.parse({ model: "public", max_tokens: 100, ...body });

function caught(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("expected a GatewayError, nothing was thrown");
}

/** What an Anthropic request must look like: the contract, and no OpenAI-only keys left behind. */
function checkMessages(out: MessagesRequest): MessagesRequest {
  MessagesRequest.parse(out);
  for (const key of Object.keys(out)) {
    expect(["model", "max_tokens", "messages", "system", "stop_sequences", "stream", "metadata", "tools", "tool_choice", "temperature", "top_p"]).toContain(
      key,
    );
  }
  return out;
}

/** What an OpenAI request must look like: the contract and OpenAI's own OpenAPI document. */
function checkChat(out: ChatCompletionRequest): ChatCompletionRequest {
  ChatCompletionRequest.parse(out);
  assertOpenAI("CreateChatCompletionRequest", out);
  return out;
}

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const weatherSchema = weatherTool.function.parameters;

describe("chatRequestToMessages: golden cases", () => {
  const cases: { name: string; req: Record<string, unknown>; want: Record<string, unknown> }[] = [
    {
      name: "when system and developer messages appear anywhere, then all become top-level system blocks in order, keeping cache_control",
      req: {
        messages: [
          { role: "system", content: "You are terse." },
          { role: "user", content: "hi" },
          {
            role: "developer",
            content: [
              { type: "text", text: "Cite sources.", cache_control: { type: "ephemeral" } },
              { type: "text", text: "" },
            ],
          },
        ],
      },
      want: {
        system: [
          { type: "text", text: "You are terse." },
          { type: "text", text: "Cite sources.", cache_control: { type: "ephemeral" } },
        ],
        messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
      },
    },
    {
      name: "when a system message carries a message-level cache_control, then its last block carries it",
      req: {
        messages: [
          { role: "system", content: "Long prompt", cache_control: { type: "ephemeral" } },
          { role: "user", content: "hi" },
        ],
      },
      want: {
        system: [{ type: "text", text: "Long prompt", cache_control: { type: "ephemeral" } }],
        messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
      },
    },
    {
      name: "when the conversation has several turns, then user and assistant turns alternate as text blocks",
      req: {
        messages: [
          { role: "user", content: "2+2?" },
          { role: "assistant", content: "4" },
          { role: "user", content: [{ type: "text", text: "and 3+3?" }] },
        ],
      },
      want: {
        messages: [
          { role: "user", content: [{ type: "text", text: "2+2?" }] },
          { role: "assistant", content: [{ type: "text", text: "4" }] },
          { role: "user", content: [{ type: "text", text: "and 3+3?" }] },
        ],
      },
    },
    {
      name: "when consecutive messages share an Anthropic role, then they merge into one turn and empty ones vanish",
      req: {
        messages: [
          { role: "user", content: "one" },
          { role: "user", content: "" },
          { role: "user", content: "two" },
          { role: "assistant", content: "a" },
          {
            role: "assistant",
            content: [
              { type: "text", text: "b" },
              { type: "refusal", refusal: "no" },
            ],
          },
          { role: "user", content: "three" },
        ],
      },
      want: {
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "one" },
              { type: "text", text: "two" },
            ],
          },
          {
            role: "assistant",
            content: [
              { type: "text", text: "a" },
              { type: "text", text: "b" },
              { type: "text", text: "no" },
            ],
          },
          { role: "user", content: [{ type: "text", text: "three" }] },
        ],
      },
    },
    {
      name: "when the assistant made parallel tool calls and both results come back, then one tool_use turn and one user turn with both tool_results before the text",
      req: {
        messages: [
          { role: "user", content: "Paris and Rome?" },
          {
            role: "assistant",
            content: "Checking.",
            tool_calls: [
              { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
              { id: "call_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
            ],
          },
          { role: "tool", tool_call_id: "call_1", content: "18C" },
          { role: "tool", tool_call_id: "call_2", content: [{ type: "text", text: "21C" }] },
          { role: "user", content: "Which is warmer?" },
        ],
        tools: [weatherTool],
      },
      want: {
        messages: [
          { role: "user", content: [{ type: "text", text: "Paris and Rome?" }] },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Checking." },
              { type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } },
              { type: "tool_use", id: "call_2", name: "get_weather", input: { city: "Rome" } },
            ],
          },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "call_1", content: "18C" },
              { type: "tool_result", tool_use_id: "call_2", content: [{ type: "text", text: "21C" }] },
              { type: "text", text: "Which is warmer?" },
            ],
          },
        ],
        tools: [{ name: "get_weather", description: "Weather for a city", input_schema: weatherSchema }],
      },
    },
    {
      name: "when a user message comes before the tool results of its turn, then the tool_results still lead the merged turn",
      req: {
        messages: [
          { role: "user", content: "go" },
          { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: "{}" } }] },
          { role: "user", content: "hurry" },
          { role: "tool", tool_call_id: "c1", content: "" },
        ],
        tools: [weatherTool],
      },
      want: {
        messages: [
          { role: "user", content: [{ type: "text", text: "go" }] },
          { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "get_weather", input: {} }] },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "c1" },
              { type: "text", text: "hurry" },
            ],
          },
        ],
        tools: [{ name: "get_weather", description: "Weather for a city", input_schema: weatherSchema }],
      },
    },
    {
      name: "when tool arguments are not a JSON object and ids hold odd characters, then input is {} and ids are rewritten alike on both ends",
      req: {
        messages: [
          { role: "user", content: "x" },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              { id: "functions.get_weather:0", type: "function", function: { name: "get_weather", arguments: "{not json" } },
              { id: "c2", type: "function", function: { name: "get_weather", arguments: "[1,2]" } },
            ],
          },
          { role: "tool", tool_call_id: "functions.get_weather:0", content: "ok" },
          { role: "tool", tool_call_id: "c2", content: "ok" },
        ],
        tools: [weatherTool],
      },
      want: {
        messages: [
          { role: "user", content: [{ type: "text", text: "x" }] },
          {
            role: "assistant",
            content: [
              { type: "tool_use", id: "functions_get_weather_0", name: "get_weather", input: {} },
              { type: "tool_use", id: "c2", name: "get_weather", input: {} },
            ],
          },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "functions_get_weather_0", content: "ok" },
              { type: "tool_result", tool_use_id: "c2", content: "ok" },
            ],
          },
        ],
        tools: [{ name: "get_weather", description: "Weather for a city", input_schema: weatherSchema }],
      },
    },
    {
      name: "when a user sends images and a PDF, then data URIs become base64 sources, URLs url sources, and the PDF a document",
      req: {
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "Compare" },
              { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "high" } },
              { type: "image_url", image_url: { url: "https://example.com/cat.jpg" }, cache_control: { type: "ephemeral" } },
              { type: "image_url", image_url: { url: "data:application/pdf;base64,JVBERi0=" } },
            ],
          },
        ],
      },
      want: {
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "Compare" },
              { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
              { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" }, cache_control: { type: "ephemeral" } },
              { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" } },
            ],
          },
        ],
      },
    },
    {
      name: "when stop is a string, then it is the one stop sequence",
      req: { messages: [{ role: "user", content: "x" }], stop: "END" },
      want: { stop_sequences: ["END"] },
    },
    {
      name: "when stop is a list, then it passes as stop_sequences",
      req: { messages: [{ role: "user", content: "x" }], stop: ["END", "\n\nHuman:"] },
      want: { stop_sequences: ["END", "\n\nHuman:"] },
    },
    {
      name: "when both max token limits are given, then max_completion_tokens wins",
      req: { messages: [{ role: "user", content: "x" }], max_tokens: 50, max_completion_tokens: 70 },
      want: { max_tokens: 70 },
    },
    {
      name: "when only max_tokens is given, then it is max_tokens",
      req: { messages: [{ role: "user", content: "x" }], max_tokens: 50 },
      want: { max_tokens: 50 },
    },
    {
      name: "when no token limit is given, then max_tokens is the default",
      req: { messages: [{ role: "user", content: "x" }] },
      want: { max_tokens: DEFAULT_MAX_TOKENS },
    },
    {
      name: "when sampling, user and stream are set, then they pass and answer-neutral parameters are dropped",
      req: {
        messages: [{ role: "user", content: "x" }],
        temperature: 0.7,
        top_p: 0.9,
        user: "user-42",
        stream: true,
        stream_options: { include_usage: false },
        seed: 7,
        store: true,
        metadata: { team: "a" },
        service_tier: "auto",
        prompt_cache_key: "k",
        prediction: { type: "content", content: "x" },
        n: 1,
        logprobs: false,
        presence_penalty: 0,
        frequency_penalty: 0,
        logit_bias: {},
        response_format: { type: "text" },
        parallel_tool_calls: true,
      },
      want: { temperature: 0.7, top_p: 0.9, metadata: { user_id: "user-42" }, stream: true },
    },
    {
      name: "when only safety_identifier identifies the user, then it becomes metadata.user_id",
      req: { messages: [{ role: "user", content: "x" }], safety_identifier: "hash-1" },
      want: { metadata: { user_id: "hash-1" } },
    },
    {
      name: "when a tool has no parameters, then input_schema is an empty object schema",
      req: { messages: [{ role: "user", content: "x" }], tools: [{ type: "function", function: { name: "now" } }] },
      want: { tools: [{ name: "now", input_schema: { type: "object", properties: {} } }] },
    },
    {
      name: "when the history has tool calls but no tools are sent, then a placeholder tool is declared that cannot be called",
      req: {
        messages: [
          { role: "user", content: "x" },
          { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
          { role: "tool", tool_call_id: "c1", content: "done" },
        ],
        tool_choice: "auto",
      },
      want: { tools: [PLACEHOLDER_TOOL], tool_choice: { type: "none" } },
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const out = checkMessages(chatRequestToMessages(chat(c.req), UP));
      expect(out.model).toBe(UP);
      expect(out).toMatchObject(c.want);
      if (!("system" in c.want)) expect(out.system).toBeUndefined();
    });
  }

  it("when answer-neutral parameters are sent, then none of them reaches the Anthropic request", () => {
    const out = chatRequestToMessages(
      chat({ messages: [{ role: "user", content: "x" }], seed: 1, store: true, metadata: { a: "b" }, stream_options: { include_usage: true }, n: 1 }),
      UP,
    );
    expect(out).toEqual({ model: UP, max_tokens: DEFAULT_MAX_TOKENS, messages: [{ role: "user", content: [{ type: "text", text: "x" }] }] });
  });
});

describe("chatRequestToMessages: tool_choice", () => {
  const cases: { name: string; choice?: unknown; parallel?: boolean; want: unknown }[] = [
    { name: "when tool_choice is auto, then it is auto", choice: "auto", want: { type: "auto" } },
    { name: "when tool_choice is required, then it is any", choice: "required", want: { type: "any" } },
    { name: "when tool_choice is none, then it is none", choice: "none", want: { type: "none" } },
    {
      name: "when tool_choice names a function, then it is that tool",
      choice: { type: "function", function: { name: "get_weather" } },
      want: { type: "tool", name: "get_weather" },
    },
    { name: "when tool_choice is absent, then there is none", want: undefined },
    {
      name: "when parallel_tool_calls is false without a choice, then auto with disable_parallel_tool_use",
      parallel: false,
      want: { type: "auto", disable_parallel_tool_use: true },
    },
    {
      name: "when parallel_tool_calls is false with required, then any with disable_parallel_tool_use",
      choice: "required",
      parallel: false,
      want: { type: "any", disable_parallel_tool_use: true },
    },
    {
      name: "when parallel_tool_calls is false with a named tool, then that tool with disable_parallel_tool_use",
      choice: { type: "function", function: { name: "get_weather" } },
      parallel: false,
      want: { type: "tool", name: "get_weather", disable_parallel_tool_use: true },
    },
    { name: "when parallel_tool_calls is false with none, then none alone", choice: "none", parallel: false, want: { type: "none" } },
    { name: "when parallel_tool_calls is true, then nothing is added", choice: "auto", parallel: true, want: { type: "auto" } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const body: Record<string, unknown> = { messages: [{ role: "user", content: "x" }], tools: [weatherTool] };
      if (c.choice !== undefined) body.tool_choice = c.choice;
      if (c.parallel !== undefined) body.parallel_tool_calls = c.parallel;
      const out = checkMessages(chatRequestToMessages(chat(body), UP));
      expect(out.tool_choice).toEqual(c.want);
    });
  }

  it("when tool_choice is auto, none or null without tools, then it is dropped", () => {
    for (const choice of ["auto", "none", null]) {
      const out = chatRequestToMessages(chat({ messages: [{ role: "user", content: "x" }], tool_choice: choice, parallel_tool_calls: false }), UP);
      expect(out.tool_choice).toBeUndefined();
      expect(out.tools).toBeUndefined();
    }
  });
});

describe("chatRequestToMessages: 400 for what Anthropic cannot honour", () => {
  const user = [{ role: "user", content: "x" }];
  const cases: { name: string; req: Record<string, unknown>; param: string }[] = [
    { name: "when n > 1, then 400 on n", req: { messages: user, n: 2 }, param: "n" },
    { name: "when logprobs is true, then 400 on logprobs", req: { messages: user, logprobs: true }, param: "logprobs" },
    { name: "when top_logprobs is set, then 400 on top_logprobs", req: { messages: user, top_logprobs: 3 }, param: "top_logprobs" },
    {
      name: "when response_format is json_object, then 400 on response_format",
      req: { messages: user, response_format: { type: "json_object" } },
      param: "response_format",
    },
    {
      name: "when response_format is json_schema, then 400 on response_format",
      req: { messages: user, response_format: { type: "json_schema", json_schema: { name: "x", schema: {} } } },
      param: "response_format",
    },
    { name: "when presence_penalty is non-zero, then 400 on presence_penalty", req: { messages: user, presence_penalty: 0.5 }, param: "presence_penalty" },
    { name: "when frequency_penalty is non-zero, then 400 on frequency_penalty", req: { messages: user, frequency_penalty: -1 }, param: "frequency_penalty" },
    { name: "when logit_bias is not empty, then 400 on logit_bias", req: { messages: user, logit_bias: { "50256": -100 } }, param: "logit_bias" },
    { name: "when temperature is above 1, then 400 on temperature", req: { messages: user, temperature: 1.5 }, param: "temperature" },
    { name: "when legacy functions are sent, then 400 on functions", req: { messages: user, functions: [{ name: "f" }] }, param: "functions" },
    { name: "when legacy function_call is sent, then 400 on function_call", req: { messages: user, function_call: "auto" }, param: "function_call" },
    { name: "when audio output is asked for, then 400 on audio", req: { messages: user, audio: { voice: "alloy", format: "mp3" } }, param: "audio" },
    { name: "when audio modality is asked for, then 400 on modalities", req: { messages: user, modalities: ["text", "audio"] }, param: "modalities" },
    { name: "when reasoning_effort is high, then 400 on reasoning_effort", req: { messages: user, reasoning_effort: "high" }, param: "reasoning_effort" },
    { name: "when verbosity is low, then 400 on verbosity", req: { messages: user, verbosity: "low" }, param: "verbosity" },
    { name: "when web search is asked for, then 400 on web_search_options", req: { messages: user, web_search_options: {} }, param: "web_search_options" },
    { name: "when tool_choice is required without tools, then 400 on tool_choice", req: { messages: user, tool_choice: "required" }, param: "tool_choice" },
    { name: "when there are only system messages, then 400 on messages", req: { messages: [{ role: "system", content: "x" }] }, param: "messages" },
    {
      name: "when a message has role function, then 400 on its role",
      req: { messages: [...user, { role: "function", name: "f", content: "r" }] },
      param: "messages[1].role",
    },
    {
      name: "when an assistant message carries a legacy function_call, then 400 on it",
      req: { messages: [...user, { role: "assistant", content: null, function_call: { name: "f", arguments: "{}" } }] },
      param: "messages[1].function_call",
    },
    {
      name: "when a user sends audio, then 400 naming the part's type",
      req: { messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AA==", format: "wav" } }] }] },
      param: "messages[0].content[0].type",
    },
    {
      name: "when a user sends a file part, then 400 naming the part's type",
      req: {
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "read" },
              { type: "file", file: { file_id: "f1" } },
            ],
          },
        ],
      },
      param: "messages[0].content[1].type",
    },
    {
      name: "when a system message holds an image, then 400 naming the part's type",
      req: {
        messages: [
          {
            role: "system",
            content: [
              { type: "text", text: "" },
              { type: "image_url", image_url: { url: "https://x/y.png" } },
            ],
          },
          ...user,
        ],
      },
      param: "messages[0].content[1].type",
    },
    {
      name: "when an image URL is neither http(s) nor a data URI, then 400 naming the url",
      req: { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "ftp://x/y.png" } }] }] },
      param: "messages[0].content[0].image_url.url",
    },
    {
      name: "when a data URI is neither an image nor a PDF, then 400 naming the url",
      req: { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:text/plain;base64,aGk=" } }] }] },
      param: "messages[0].content[0].image_url.url",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const err = caught(() => chatRequestToMessages(chat(c.req), UP));
      expect(err.status).toBe(400);
      expect(err.code).toBe("invalid_request");
      expect(err.param).toBe(c.param);
    });
  }

  it("when response_format is refused, then the message says it is not supported for this model yet", () => {
    const err = caught(() => chatRequestToMessages(chat({ messages: user, response_format: { type: "json_object" } }), UP));
    expect(err.message).toMatch(/not supported for this model yet/);
  });

  it("when the limits hold exactly (temperature 1, reasoning_effort none, verbosity medium, modalities text), then nothing is refused", () => {
    const body = { messages: user, temperature: 1, reasoning_effort: "none", verbosity: "medium", modalities: ["text"], top_logprobs: 0 };
    expect(chatRequestToMessages(chat(body), UP).temperature).toBe(1);
  });
});

describe("messagesRequestToChat: golden cases", () => {
  const cases: { name: string; req: Record<string, unknown>; want: Record<string, unknown> }[] = [
    {
      name: "when system is a string, then it is the first system message",
      req: { system: "Be brief.", messages: [{ role: "user", content: "hi" }] },
      want: {
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "hi" },
        ],
      },
    },
    {
      name: "when system is text blocks, then they join into the first system message and cache_control is dropped",
      req: {
        system: [
          { type: "text", text: "Rule one." },
          { type: "text", text: "Rule two.", cache_control: { type: "ephemeral" } },
        ],
        messages: [{ role: "user", content: "hi" }],
      },
      want: {
        messages: [
          { role: "system", content: "Rule one.\n\nRule two." },
          { role: "user", content: "hi" },
        ],
      },
    },
    {
      name: "when a system message comes mid-conversation, then it stays in place",
      req: {
        system: "Top.",
        messages: [
          { role: "user", content: "a" },
          { role: "assistant", content: "b" },
          { role: "system", content: [{ type: "text", text: "Now switch to French." }] },
          { role: "user", content: "c" },
        ],
      },
      want: {
        messages: [
          { role: "system", content: "Top." },
          { role: "user", content: "a" },
          { role: "assistant", content: "b" },
          { role: "system", content: "Now switch to French." },
          { role: "user", content: "c" },
        ],
      },
    },
    {
      name: "when the assistant made parallel tool calls and the user returns both results with a question, then tool messages come first, then the user's text",
      req: {
        messages: [
          { role: "user", content: [{ type: "text", text: "Paris and Rome?" }] },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Checking." },
              { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
              { type: "tool_use", id: "toolu_2", name: "get_weather", input: { city: "Rome" } },
            ],
          },
          {
            role: "user",
            content: [
              { type: "text", text: "Which is warmer?" },
              { type: "tool_result", tool_use_id: "toolu_1", content: "18C" },
              {
                type: "tool_result",
                tool_use_id: "toolu_2",
                content: [
                  { type: "text", text: "21C" },
                  { type: "text", text: "sunny" },
                ],
                is_error: false,
              },
            ],
          },
        ],
      },
      want: {
        messages: [
          { role: "user", content: "Paris and Rome?" },
          {
            role: "assistant",
            content: "Checking.",
            tool_calls: [
              { id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
              { id: "toolu_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
            ],
          },
          { role: "tool", tool_call_id: "toolu_1", content: "18C" },
          { role: "tool", tool_call_id: "toolu_2", content: "21C\n\nsunny" },
          { role: "user", content: "Which is warmer?" },
        ],
      },
    },
    {
      name: "when the assistant only called a tool and the result is empty, then content is null and the tool message is empty",
      req: {
        messages: [
          { role: "user", content: "go" },
          { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "now", input: {} }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1" }] },
        ],
      },
      want: {
        messages: [
          { role: "user", content: "go" },
          { role: "assistant", content: null, tool_calls: [{ id: "toolu_1", type: "function", function: { name: "now", arguments: "{}" } }] },
          { role: "tool", tool_call_id: "toolu_1", content: "" },
        ],
      },
    },
    {
      name: "when assistant text comes in several blocks, then they join with nothing (pieces of one answer)",
      req: {
        messages: [
          { role: "user", content: "q" },
          {
            role: "assistant",
            content: [
              { type: "text", text: "The answer is " },
              { type: "text", text: "42", citations: [] },
              { type: "text", text: "." },
            ],
          },
          { role: "user", content: "thanks" },
        ],
      },
      want: {
        messages: [
          { role: "user", content: "q" },
          { role: "assistant", content: "The answer is 42." },
          { role: "user", content: "thanks" },
        ],
      },
    },
    {
      name: "when a user sends images, then they become image_url parts (base64 as a data URI) beside text parts",
      req: {
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "Compare" },
              { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
              { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
            ],
          },
        ],
      },
      want: {
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "Compare" },
              { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
              { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
            ],
          },
        ],
      },
    },
    {
      name: "when tools are given, then they become function tools with input_schema as parameters",
      req: {
        messages: [{ role: "user", content: "x" }],
        tools: [
          { name: "get_weather", description: "Weather for a city", input_schema: weatherSchema, cache_control: { type: "ephemeral" } },
          { name: "now", type: "custom" },
        ],
      },
      want: {
        tools: [weatherTool, { type: "function", function: { name: "now", parameters: { type: "object", properties: {} } } }],
      },
    },
    {
      name: "when stop sequences, user id, limits and sampling are set, then they map to stop, user, max_tokens, temperature and top_p",
      req: {
        messages: [{ role: "user", content: "x" }],
        max_tokens: 321,
        stop_sequences: ["END", "STOP"],
        metadata: { user_id: "user-42" },
        temperature: 0.2,
        top_p: 0.8,
        service_tier: "auto",
        thinking: { type: "disabled" },
      },
      want: { max_tokens: 321, stop: ["END", "STOP"], user: "user-42", temperature: 0.2, top_p: 0.8 },
    },
    {
      name: "when stream is true, then the chat request streams and asks for usage",
      req: { messages: [{ role: "user", content: "x" }], stream: true },
      want: { stream: true, stream_options: { include_usage: true } },
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const out = checkChat(messagesRequestToChat(msgs(c.req), "gpt-up"));
      expect(out.model).toBe("gpt-up");
      expect(out).toMatchObject(c.want);
      if ("messages" in c.want) expect(out.messages).toEqual(c.want.messages);
      if ("tools" in c.want) expect(out.tools).toEqual(c.want.tools);
    });
  }

  it("when only the required fields are sent, then the chat request holds only model, messages and max_tokens", () => {
    const out = messagesRequestToChat(msgs({ messages: [{ role: "user", content: "x" }], service_tier: "auto", speed: "fast" }), "gpt-up");
    expect(out).toEqual({ model: "gpt-up", messages: [{ role: "user", content: "x" }], max_tokens: 100 });
  });

  const choices: { name: string; choice: Record<string, unknown>; want: unknown; parallel?: boolean }[] = [
    { name: "when tool_choice is any, then it is required", choice: { type: "any" }, want: "required" },
    { name: "when tool_choice is auto, then it is auto", choice: { type: "auto" }, want: "auto" },
    { name: "when tool_choice is none, then it is none", choice: { type: "none" }, want: "none" },
    {
      name: "when tool_choice is a tool, then it is that function",
      choice: { type: "tool", name: "get_weather" },
      want: { type: "function", function: { name: "get_weather" } },
    },
    {
      name: "when disable_parallel_tool_use is true, then parallel_tool_calls is false",
      choice: { type: "auto", disable_parallel_tool_use: true },
      want: "auto",
      parallel: false,
    },
  ];
  for (const c of choices) {
    it(c.name, () => {
      const req = msgs({ messages: [{ role: "user", content: "x" }], tools: [{ name: "get_weather", input_schema: weatherSchema }], tool_choice: c.choice });
      const out = checkChat(messagesRequestToChat(req, "gpt-up"));
      expect(out.tool_choice).toEqual(c.want);
      expect(out.parallel_tool_calls).toBe(c.parallel);
    });
  }
});

describe("messagesRequestToChat: 400 for what the chat model cannot honour", () => {
  const user = [{ role: "user", content: "x" }];
  const cases: { name: string; req: Record<string, unknown>; param: string }[] = [
    { name: "when top_k is set, then 400 on top_k", req: { messages: user, top_k: 5 }, param: "top_k" },
    { name: "when thinking is enabled, then 400 on thinking", req: { messages: user, thinking: { type: "enabled", budget_tokens: 2048 } }, param: "thinking" },
    { name: "when thinking is adaptive, then 400 on thinking", req: { messages: user, thinking: { type: "adaptive" } }, param: "thinking" },
    {
      name: "when output_format is set, then 400 on output_format",
      req: { messages: user, output_format: { type: "json_schema", schema: {} } },
      param: "output_format",
    },
    {
      name: "when output_config asks for something, then 400 on output_config",
      req: { messages: user, output_config: { effort: "high" } },
      param: "output_config",
    },
    {
      name: "when mcp_servers are given, then 400 on mcp_servers",
      req: { messages: user, mcp_servers: [{ type: "url", url: "https://m", name: "m" }] },
      param: "mcp_servers",
    },
    { name: "when a container is given, then 400 on container", req: { messages: user, container: "c1" }, param: "container" },
    { name: "when context_management is given, then 400 on it", req: { messages: user, context_management: { edits: [] } }, param: "context_management" },
    {
      name: "when a user sends a document, then 400 naming the block's type",
      req: {
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "read" },
              { type: "document", source: { type: "text", media_type: "text/plain", data: "d" } },
            ],
          },
        ],
      },
      param: "messages[0].content[1].type",
    },
    {
      name: "when history holds a thinking block, then 400 naming it",
      req: {
        messages: [
          { role: "user", content: "q" },
          {
            role: "assistant",
            content: [
              { type: "thinking", thinking: "hmm", signature: "s" },
              { type: "text", text: "a" },
            ],
          },
          { role: "user", content: "again" },
        ],
      },
      param: "messages[1].content[0].type",
    },
    {
      name: "when a tool result holds an image, then 400 naming the nested block",
      req: {
        messages: [
          { role: "user", content: "q" },
          { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "shot", input: {} }] },
          {
            role: "user",
            content: [
              {
                type: "tool_result",
                tool_use_id: "t1",
                content: [
                  { type: "text", text: "here" },
                  { type: "image", source: { type: "url", url: "https://x/y.png" } },
                ],
              },
            ],
          },
        ],
      },
      param: "messages[2].content[0].content[1].type",
    },
    {
      name: "when an image comes from the Files API, then 400 naming its source type",
      req: { messages: [{ role: "user", content: [{ type: "image", source: { type: "file", file_id: "file_1" } }] }] },
      param: "messages[0].content[0].source.type",
    },
    {
      name: "when the system prompt holds a non-text block, then 400 naming it",
      req: {
        system: [
          { type: "text", text: "a" },
          { type: "image", source: { type: "url", url: "https://x" } },
        ],
        messages: user,
      },
      param: "system[1].type",
    },
    {
      name: "when the last message is the assistant's (prefill), then 400 on its role",
      req: { messages: [...user, { role: "assistant", content: "{" }] },
      param: "messages[1].role",
    },
    {
      name: "when a server tool is given, then 400 on its type",
      req: { messages: user, tools: [{ type: "web_search_20250305", name: "web_search" }] },
      param: "tools[0].type",
    },
    { name: "when a tool name is longer than 64, then 400 on its name", req: { messages: user, tools: [{ name: "t".repeat(65) }] }, param: "tools[0].name" },
    {
      name: "when tool_choice names no tool, then 400 on tool_choice.name",
      req: { messages: user, tools: [{ name: "f" }], tool_choice: { type: "tool" } },
      param: "tool_choice.name",
    },
    { name: "when tool_choice is any without tools, then 400 on tool_choice", req: { messages: user, tool_choice: { type: "any" } }, param: "tool_choice" },
    {
      name: "when more than 4 stop sequences are given, then 400 on stop_sequences",
      req: { messages: user, stop_sequences: ["a", "b", "c", "d", "e"] },
      param: "stop_sequences",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const err = caught(() => messagesRequestToChat(msgs(c.req), "gpt-up"));
      expect(err.status).toBe(400);
      expect(err.code).toBe("invalid_request");
      expect(err.param).toBe(c.param);
    });
  }
});

describe("round trips", () => {
  it("when a chat conversation with parallel tool calls goes to messages and back, then it is the same conversation", () => {
    const original = chat({
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Weather in Paris and Rome?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
            { id: "call_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "18C" },
        { role: "tool", tool_call_id: "call_2", content: "21C" },
        { role: "assistant", content: "Rome is warmer." },
        {
          role: "user",
          content: [
            { type: "text", text: "And this one?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          ],
        },
      ],
      tools: [weatherTool],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      stop: ["END"],
      max_tokens: 200,
      temperature: 0.3,
      top_p: 0.5,
      user: "user-1",
      stream: true,
    });
    const back = checkChat(messagesRequestToChat(checkMessages(chatRequestToMessages(original, UP)), "public"));
    expect(back).toEqual({ ...original, stream_options: { include_usage: true } });
  });

  it("when a messages conversation with tool results goes to chat and back, then it is the same conversation", () => {
    const original = msgs({
      system: [{ type: "text", text: "Be brief." }],
      messages: [
        { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking." },
            { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: "18C" },
            { type: "text", text: "Thanks, and tomorrow?" },
          ],
        },
      ],
      tools: [{ name: "get_weather", description: "Weather for a city", input_schema: weatherSchema }],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      stop_sequences: ["END"],
      metadata: { user_id: "user-1" },
      temperature: 0.3,
      stream: false,
    });
    const back = checkMessages(chatRequestToMessages(checkChat(messagesRequestToChat(original, "gpt-up")), "public"));
    expect(back).toEqual(original);
  });
});
