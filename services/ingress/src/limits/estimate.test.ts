import { describe, expect, it } from "vitest";
import { estimateTokens } from "./estimate";

describe("estimateTokens", () => {
  it("when a chat request sets max_tokens, then the estimate is its text at ~4 characters a token plus that maximum", () => {
    const body = { model: "gpt-4o-mini", messages: [{ role: "user", content: "x".repeat(400) }], max_tokens: 50 };
    expect(estimateTokens("/v1/chat/completions", body)).toBe(1 + 100 + 50);
  });

  it("when a chat request sets no maximum, then the route's default output budget applies, times n", () => {
    const body = { model: "m", messages: [{ role: "user", content: "abcd" }], n: 3 };
    expect(estimateTokens("/v1/chat/completions", body)).toBe(1 + 1 + 3 * 1024);
    expect(estimateTokens("/v1/completions", { model: "m", prompt: "abcd" })).toBe(1 + 16);
  });

  it("when both max_completion_tokens and max_tokens are set, then the newer field wins; responses use max_output_tokens", () => {
    expect(estimateTokens("/v1/chat/completions", { messages: [], max_completion_tokens: 10, max_tokens: 500 })).toBe(10);
    expect(estimateTokens("/v1/responses", { input: "abcd", max_output_tokens: 7 })).toBe(1 + 7);
  });

  it("when the input is an embedding or rerank request, then only the input counts", () => {
    expect(estimateTokens("/v1/embeddings", { model: "e", input: ["abcdabcd", "abcd"] })).toBe(3);
    expect(estimateTokens("/v1/rerank", { model: "r", query: "abcd", documents: ["abcdabcd"], top_n: 5 })).toBe(3);
  });

  it("when a message carries an inline image, then it counts as one attachment, not as its base64 length", () => {
    const image = `data:image/png;base64,${"A".repeat(200_000)}`;
    const body = { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: image } }] }], max_tokens: 1 };
    expect(estimateTokens("/v1/chat/completions", body)).toBeLessThan(2_000);
    const anthropic = { max_tokens: 1, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", data: "B".repeat(100_000) } }] }] };
    expect(estimateTokens("/v1/messages", anthropic)).toBeLessThan(2_000);
  });

  it("when an OCR document comes inline as a data: URL, then it counts as one attachment", () => {
    const pdf = `data:application/pdf;base64,${"J".repeat(4_000_000)}`;
    expect(estimateTokens("/v1/ocr", { model: "ocr", document: { type: "document_url", document_url: pdf } })).toBeLessThan(2_000);
  });

  it("when the body is not a JSON object (multipart, empty), then nothing is reserved", () => {
    expect(estimateTokens("/v1/audio/transcriptions", undefined)).toBe(0);
    expect(estimateTokens("/v1/chat/completions", [1, 2])).toBe(0);
    expect(estimateTokens("/v1/chat/completions", { messages: [], max_tokens: -5 })).toBe(1024);
  });
});
