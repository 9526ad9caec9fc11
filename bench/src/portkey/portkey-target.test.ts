import { describe, expect, it } from "vitest";
import type { Answer, TimedClient } from "../http-client";
import { chatRequestBody } from "../targets";
import { chatCompletionBody } from "../upstream/payloads";
import { portkeyChatTarget, verifyPortkeyPath } from "./portkey-target";

const answering = (status: number, text: string): TimedClient => ({
  timed: async () => 1,
  once: async (): Promise<Answer> => ({ status, headers: {}, text }),
  close: async () => {},
});

describe("portkeyChatTarget", () => {
  it("sends the benchmark's chat body to Portkey's chat path with the routing headers", () => {
    const headers = { "x-portkey-provider": "openai", "x-portkey-custom-host": "http://127.0.0.1:4000/v1", authorization: "Bearer sk-up" };
    const target = portkeyChatTarget({ baseURL: "http://127.0.0.1:8787/v1", headers });
    expect(target).toEqual({
      origin: "http://127.0.0.1:8787",
      path: "/v1/chat/completions",
      headers: { ...headers, "content-type": "application/json" },
      body: chatRequestBody,
    });
  });
});

describe("verifyPortkeyPath", () => {
  it("accepts a 200 carrying the upstream's answer, whatever the model name", async () => {
    await expect(verifyPortkeyPath(answering(200, chatCompletionBody().toString("utf8")))).resolves.toBeUndefined();
  });

  it("rejects an error status, another answer, or no JSON", async () => {
    await expect(verifyPortkeyPath(answering(400, `{"status":"failure","message":"Invalid custom host"}`))).rejects.toThrow(/status 400.*Invalid custom host/);
    await expect(verifyPortkeyPath(answering(200, `{"choices":[{"message":{"content":"hello"}}]}`))).rejects.toThrow(/unexpected answer/);
    await expect(verifyPortkeyPath(answering(200, "<html>"))).rejects.toThrow(/unexpected answer/);
  });
});
