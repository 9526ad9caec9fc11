import { readFileSync } from "node:fs";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { referenceFilePath, validateOpenAI } from "@gw/testkit";
import { buildComponents } from "./components";
import { buildApiDocument } from "./document";
import { isObject, type JsonSchema } from "./json-schema";
import { publicOperations } from "./operations";

const doc = buildApiDocument({ version: "1.2.3" });
const paths = doc.paths as Record<string, Record<string, JsonSchema>>;
const components = doc.components as Record<string, Record<string, JsonSchema>>;

/** Every `$ref` string anywhere in a value. */
function refsIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refsIn(v, out);
  else if (isObject(value)) for (const [k, v] of Object.entries(value)) k === "$ref" && typeof v === "string" ? out.push(v) : refsIn(v, out);
  return out;
}

describe("the OpenAPI document of the public API", () => {
  it("when it is built, then it is valid OpenAPI 3.1 and every $ref names a component", async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(validator.version).toBe("3.1");
    for (const ref of refsIn(doc)) {
      const [, , section, name] = ref.split("/");
      expect(components[section!]?.[name!], ref).toBeDefined();
    }
  });

  it("when the operations are listed, then each has a unique id, a tag the document declares, a 2xx answer and an error answer", () => {
    const tags = new Set((doc.tags as { name: string }[]).map((t) => t.name));
    const ids = new Set<string>();
    for (const [path, item] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(item)) {
        const where = `${method.toUpperCase()} ${path}`;
        expect(ids.has(op.operationId as string), where).toBe(false);
        ids.add(op.operationId as string);
        expect(tags.has((op.tags as string[])[0]!), where).toBe(true);
        const statuses = Object.keys(op.responses as object).map(Number);
        expect(
          statuses.some((s) => s === 200 || s === 202),
          where,
        ).toBe(true);
        expect(statuses, where).toContain(401);
      }
    }
    expect(ids.size).toBe(publicOperations().length);
  });

  it("when a route is a Messages route, then its errors are Anthropic's envelope, and OpenAI's everywhere else", () => {
    for (const [path, item] of Object.entries(paths)) {
      const anthropic = /^\/v1\/(async\/)?messages(\/|$)/.test(path);
      for (const op of Object.values(item)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, JsonSchema>)) {
          if (Number(status) < 400) continue;
          expect(response.$ref, `${path} ${status}`).toMatch(anthropic ? /\/AnthropicError\d+$/ : /\/OpenAIError\d+$/);
        }
      }
    }
  });

  it("when a call counts against the rate limits, then its answer documents the x-ratelimit-* headers, and every answer x-request-id", () => {
    const created = paths["/v1/chat/completions"]!.post!.responses as Record<string, JsonSchema>;
    expect(Object.keys(created["200"]!.headers as object)).toEqual(
      expect.arrayContaining(["x-request-id", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-requests"]),
    );
    const read = paths["/v1/models"]!.get!.responses as Record<string, JsonSchema>;
    expect(Object.keys(read["200"]!.headers as object)).toEqual(["x-request-id"]);
    const limited = components.responses!.OpenAIError429!;
    expect(Object.keys(limited.headers as object)).toEqual(expect.arrayContaining(["retry-after", "retry-after-ms", "x-ratelimit-limit-requests"]));
    expect(doc.security).toEqual([{ BearerAuth: [] }, { ApiKeyAuth: [] }]);
  });

  it("when a request body has an example, then its own zod contract accepts it", () => {
    const { requestSchemas } = buildComponents();
    for (const op of publicOperations()) {
      if (!op.body) continue;
      const example = op.body.kind === "multipart" ? { ...op.body.example, file: new Blob([new Uint8Array(16)]) } : op.body.example;
      const parsed = requestSchemas[op.body.schema]!.safeParse(example);
      expect(parsed.error?.issues ?? [], `${op.path}`).toEqual([]);
    }
  });

  it("when a contract schema is loose on purpose, then its component says what passes through", () => {
    const schemas = components.schemas!;
    for (const [name, schema] of Object.entries(schemas)) expect(schema.description, name).toBeTruthy();
    expect(schemas.ChatCompletionRequest!.description).toMatch(/pass through to the upstream unchanged/);
    expect(schemas.ChatCompletionRequest!.additionalProperties).toBe(true);
    // Where a refinement picks the schema by `type`, the component shows what it accepts.
    expect(refsIn(schemas.ResponsesInputItem)).toEqual(expect.arrayContaining(["#/components/schemas/ResponsesFunctionCall"]));
    expect(schemas.TranscriptionForm!.properties).toMatchObject({ file: { type: "string", format: "binary" } });
  });
});

/** OpenAI's request schemas by the name our component for the same request has. */
const openaiRequests: Record<string, string> = {
  ChatCompletionRequest: "CreateChatCompletionRequest",
  CompletionRequest: "CreateCompletionRequest",
  EmbeddingsRequest: "CreateEmbeddingRequest",
  ImageGenerationRequest: "CreateImageRequest",
  SpeechRequest: "CreateSpeechRequest",
  ResponsesRequest: "CreateResponse",
  TranscriptionForm: "CreateTranscriptionRequest",
  FileUploadForm: "CreateFileRequest",
  CreateBatchRequest: "CreateBatchRequest",
};

describe("the request schemas it shares with OpenAI's own document", () => {
  const openai = JSON.parse(readFileSync(referenceFilePath("openai-openapi.json"), "utf8")) as { components: { schemas: Record<string, JsonSchema> } };
  const resolve = (s: JsonSchema): JsonSchema => (typeof s.$ref === "string" ? resolve(openai.components.schemas[s.$ref.split("/").pop()!]!) : s);
  /** A schema's properties, through `allOf` and `$ref`. */
  const propertiesOf = (s: JsonSchema): Record<string, JsonSchema> =>
    Object.assign({}, ...((resolve(s).allOf as JsonSchema[] | undefined) ?? []).map(propertiesOf), resolve(s).properties ?? {});
  /** The values an enum-like schema allows, through `anyOf`/`oneOf`, `$ref` and `const`. */
  const enumOf = (s: JsonSchema, out = new Set<unknown>()): Set<unknown> => {
    const r = resolve(s);
    for (const v of (r.enum as unknown[] | undefined) ?? []) out.add(v);
    if ("const" in r) out.add(r.const);
    for (const branch of [...((r.anyOf as JsonSchema[]) ?? []), ...((r.oneOf as JsonSchema[]) ?? [])]) enumOf(branch, out);
    return out;
  };

  /** Their field by our name: a form's `a[b]` is field `b` of their object `a`, as OpenAI's clients send it. */
  const fieldOf = (fields: Record<string, JsonSchema>, name: string): JsonSchema | undefined => {
    const nested = /^(\w+)\[(\w+)\]$/.exec(name);
    if (!nested) return fields[name];
    const parent = fields[nested[1]!];
    return parent && propertiesOf(parent)[nested[2]!];
  };

  it("when our schema names a field, then OpenAI's request has that field, and our closed value sets are within OpenAI's", () => {
    const ours = components.schemas!;
    for (const [name, theirs] of Object.entries(openaiRequests)) {
      const theirFields = propertiesOf(openai.components.schemas[theirs]!);
      for (const [field, schema] of Object.entries(ours[name]!.properties as Record<string, JsonSchema>)) {
        const theirField = fieldOf(theirFields, field);
        expect(theirField, `${name}.${field} in ${theirs}`).toBeDefined();
        const ourValues = [...enumOf(schema)].filter((v) => v !== null);
        const theirValues = enumOf(theirField!);
        // Only where OpenAI closes the set too (it leaves voices, sizes etc. open as strings).
        if (ourValues.length > 0 && theirValues.size > 0)
          expect(
            ourValues.filter((v) => !theirValues.has(v)),
            `${name}.${field}`,
          ).toEqual([]);
      }
    }
  });

  it("when a documented JSON example is sent to OpenAI's schema for the same request, then it is valid there too", () => {
    for (const op of publicOperations()) {
      const theirs = op.body?.kind === "json" && !op.path.startsWith("/v1/async/") ? openaiRequests[op.body.schema] : undefined;
      if (theirs) expect(validateOpenAI(theirs, op.body!.example).errors, op.path).toBe("");
    }
  });
});
