import { describe, expect, it } from "vitest";
import { capturedJson, REDACTED, redactRawText, redactValue } from "./redact";

describe("redaction of captured bodies", () => {
  it("when a credential sits deep in a body, under a credential's name or as a key-like string, then it is gone", () => {
    const body = {
      model: "gpt-4o",
      max_tokens: 5,
      messages: [
        { role: "user", content: "my key is gw_live_abcdefghijklmnopqrstuvwx and sk-proj-ABCDEFGHIJKLMNOPQRSTUV, thanks" },
        { role: "tool", content: [{ type: "text", text: "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload" }] },
      ],
      tools: [{ function: { parameters: { properties: { api_key: { type: "string" } } } } }],
      metadata: { nested: { deeper: { Password: "hunter2", credentials: { user: "u", anything: "x" }, token: 12345 } } },
    };
    const out = redactValue(body) as typeof body;
    const text = JSON.stringify(out);
    for (const secret of ["gw_live_abcdefghijklmnopqrstuvwx", "sk-proj-ABCDEFGHIJKLMNOPQRSTUV", "eyJhbGciOiJIUzI1NiJ9", "hunter2", '"anything"', "12345"]) {
      expect(text).not.toContain(secret);
    }
    expect(out.messages[0]?.content).toBe(`my key is ${REDACTED} and ${REDACTED}, thanks`);
    expect(out.metadata.nested.deeper).toEqual({ Password: REDACTED, credentials: REDACTED, token: REDACTED });
    // What is not a credential is left as it was, a schema's `api_key` property description included.
    expect(out.model).toBe("gpt-4o");
    expect(out.max_tokens).toBe(5);
    expect(out.tools[0]?.function.parameters.properties.api_key).toBe(REDACTED);
    expect(body.metadata.nested.deeper.Password).toBe("hunter2");
  });

  it("when a body is text that is not whole JSON, then credential fields and key-like strings are redacted in the text", () => {
    const cut =
      '{"headers": {"authorization": "Basic dXNlcjpwYXNz", "x-api-key":"sk-ant-api03-abcdefghijklmnopqrstuv"}, "text": "tvly-abcdefghijklmnopqrst and AKIAABCDEFGHIJKLMNOP", "tru';
    const out = redactRawText(cut);
    expect(out).not.toMatch(/dXNlcjpwYXNz|sk-ant-api03|tvly-abc|AKIAABCD/);
    expect(out).toContain(`"authorization": "${REDACTED}"`);
    expect(out.endsWith('"tru')).toBe(true);
  });
});

describe("configured provider keys", () => {
  it("when a key the gateway holds appears anywhere, whatever its shape, then it is redacted; a short one is not looked for", () => {
    const configured = "upstream-key-with-no-known-shape-42";
    const out = redactValue({ a: [{ b: `pasted ${configured} here` }], c: "abc" }, [configured, "abc"]) as { a: { b: string }[]; c: string };
    expect(out.a[0]?.b).toBe(`pasted ${REDACTED} here`);
    expect(out.c).toBe("abc");
    expect(redactRawText(`{"x": "${configured}"`, [configured])).toBe(`{"x": "${REDACTED}"`);
  });
});

describe("a captured JSON body", () => {
  it("when it is over the cap, then it is cut on a character boundary and marked, with its original size", () => {
    const body = { text: "é".repeat(100) };
    const whole = capturedJson(body, 300, 1_000);
    expect(whole).toEqual({ text: JSON.stringify(body), truncated: false, bytes: 300, content_type: "application/json" });
    const cut = capturedJson(body, 300, 51);
    expect(cut.truncated).toBe(true);
    expect(Buffer.byteLength(cut.text)).toBeLessThanOrEqual(51);
    expect(cut.text).toBe(`{"text":"${"é".repeat(21)}`);
  });
});
