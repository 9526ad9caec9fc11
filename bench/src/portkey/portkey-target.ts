import type { RequestTarget, TimedClient } from "../http-client";
import { chatRequestBody } from "../targets";
import { answerText } from "../upstream/payloads";

/**
 * The benchmark's chat request through Portkey: the very same body as the direct and gateway
 * paths, with Portkey's routing headers (which carry the upstream key) in place of a gateway key.
 */
export function portkeyChatTarget(portkey: { baseURL: string; headers: Record<string, string> }): RequestTarget {
  const url = new URL(`${portkey.baseURL}/chat/completions`);
  return {
    origin: url.origin,
    path: url.pathname,
    headers: { ...portkey.headers, "content-type": "application/json" },
    body: chatRequestBody,
  };
}

/**
 * One request before any timing: Portkey must answer 200 with the upstream's text. Portkey passes
 * OpenAI's model name through unchanged, so unlike the gateway there is no public name to check.
 */
export async function verifyPortkeyPath(client: TimedClient): Promise<void> {
  const answer = await client.once();
  if (answer.status !== 200) throw new Error(`portkey: status ${answer.status}: ${answer.text.slice(0, 500)}`);
  let content: unknown;
  try {
    content = (JSON.parse(answer.text) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message?.content;
  } catch {
    content = undefined;
  }
  if (content !== answerText) throw new Error(`portkey: unexpected answer ${answer.text.slice(0, 500)}`);
}
