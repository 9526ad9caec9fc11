import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { referenceFilePath } from "./spec-files";
import { assertOpenAI, createSpecValidator, validateOpenAI } from "./validate";

const chunk = {
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1,
  model: "gpt-4o",
  choices: [{ index: 0, delta: { content: "hi" }, logprobs: null, finish_reason: null }],
};

describe("validateOpenAI", () => {
  it("when a nullable field ($ref + nullable, enum + nullable) is null, then it validates", () => {
    expect(validateOpenAI("CreateChatCompletionStreamResponse", { ...chunk, usage: null })).toEqual({ valid: true, errors: "" });
  });

  it("when a value breaks the schema, then errors name the JSON path and the allowed values", () => {
    const result = validateOpenAI("CreateChatCompletionStreamResponse", {
      ...chunk,
      object: "chat.completion",
      choices: [{ index: 0, delta: {}, finish_reason: "done" }],
    });
    expect(result.valid).toBe(false);
    expect(result.errors).toContain('/object: must be equal to one of the allowed values ["chat.completion.chunk"]');
    expect(result.errors).toContain("/choices/0/finish_reason");
  });

  it("when a discriminated oneOf member matches, then it validates, and a foreign member does not", () => {
    const response = (toolCall: object) => ({
      id: "x",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [
        { index: 0, finish_reason: "tool_calls", logprobs: null, message: { role: "assistant", content: null, refusal: null, tool_calls: [toolCall] } },
      ],
    });
    const custom = { id: "c", type: "custom", custom: { name: "grep", input: "x" } };
    expect(validateOpenAI("CreateChatCompletionResponse", response(custom)).valid).toBe(true);
    expect(validateOpenAI("CreateChatCompletionResponse", response({ id: "c", type: "mystery" })).valid).toBe(false);
  });

  it("when a schema recurses through $recursiveRef, then nested levels are checked too", () => {
    const leaf = { type: "eq", key: "a", value: "b" };
    expect(validateOpenAI("CompoundFilter", { type: "and", filters: [leaf, { type: "or", filters: [leaf] }] }).valid).toBe(true);
    expect(validateOpenAI("CompoundFilter", { type: "and", filters: [{ type: "or", filters: "nope" }] }).valid).toBe(false);
  });

  it("when the schema name does not exist, then it throws naming it", () => {
    expect(() => validateOpenAI("NoSuchSchema", {})).toThrow(/components\.schemas\.NoSuchSchema/);
  });

  it("when assertOpenAI fails, then the error lists the problems and shows the value", () => {
    expect(() => assertOpenAI("ErrorResponse", { error: { message: "m" } })).toThrow(
      /ErrorResponse:\n.*must have required property 'type'[\s\S]*value: \{"error"/,
    );
  });
});

describe("createSpecValidator", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("when given a document by absolute path, then its OpenAPI 3.0 schemas are used with 3.0 semantics", () => {
    dir = mkdtempSync(join(tmpdir(), "gw-openapi-"));
    const file = join(dir, "mini.json");
    writeFileSync(
      file,
      JSON.stringify({
        openapi: "3.0.3",
        components: {
          schemas: {
            Score: {
              type: "object",
              required: ["value"],
              properties: { value: { type: "number", minimum: 0, exclusiveMinimum: true, nullable: true }, "x-note": { type: "string" } },
            },
          },
        },
      }),
    );
    const mini = createSpecValidator(file, "Mini");
    expect(mini.validate("Score", { value: 0.5 }).valid).toBe(true);
    expect(mini.validate("Score", { value: null }).valid).toBe(true);
    expect(mini.validate("Score", { value: 0 }).valid).toBe(false);
    // Property names that look like OpenAPI extensions are still properties.
    expect(mini.validate("Score", { value: 1, "x-note": 5 }).valid).toBe(false);
  });

  it("when a vendored document is asked for, then it is read from the repository itself", () => {
    expect(referenceFilePath("openai-openapi.json")).toMatch(/packages\/testkit\/openapi\/openai-openapi\.json$/);
    expect(() => referenceFilePath("nope.json")).toThrow(/cannot find the OpenAPI document/);
  });
});
