import type { BenchGateway } from "./gateway/start-gateway";
import { benchModel } from "./gateway/start-gateway";
import type { RequestTarget, TimedClient } from "./http-client";
import type { UpstreamProcess } from "./upstream/spawn-upstream";
import { answerText } from "./upstream/payloads";

export type ChatPath = "direct" | "gateway";
export const chatPaths: readonly ChatPath[] = ["direct", "gateway"];

/** A short, typical chat request; byte-identical on both paths except for the key. */
export const chatRequestBody = Buffer.from(
  JSON.stringify({
    model: benchModel,
    messages: [
      { role: "system", content: "You are a concise assistant." },
      { role: "user", content: "In two sentences, why should a gateway add little latency?" },
    ],
    temperature: 0.2,
    max_tokens: 128,
  }),
);

/**
 * The same request streamed, asking for usage: the gateway always asks its upstream for usage on a
 * stream, so with include_usage on both paths the upstream sends the very same frames to each.
 */
export const streamingChatRequestBody = Buffer.from(
  JSON.stringify({ ...(JSON.parse(chatRequestBody.toString("utf8")) as object), stream: true, stream_options: { include_usage: true } }),
);

/** The chat targets with the streaming body: same origins, paths and keys. */
export function streamingChatTargets(chat: Record<ChatPath, RequestTarget>): Record<ChatPath, RequestTarget> {
  return { direct: { ...chat.direct, body: streamingChatRequestBody }, gateway: { ...chat.gateway, body: streamingChatRequestBody } };
}

/** The same non-streaming chat request, straight to the upstream and through the gateway. */
export function chatTargets(upstream: UpstreamProcess, gateway: BenchGateway, upstreamKey: string): Record<ChatPath, RequestTarget> {
  return { direct: chatTarget(upstream.url, upstreamKey), gateway: gatewayChatTarget(gateway) };
}

/** The chat request through a mesh with its workspace key (this tree's or a baseline's). */
export function gatewayChatTarget(gateway: Pick<BenchGateway, "baseURL" | "key">): RequestTarget {
  return chatTarget(gateway.baseURL, gateway.key);
}

function chatTarget(baseURL: string, key: string): RequestTarget {
  const url = new URL(`${baseURL}/chat/completions`);
  return {
    origin: url.origin,
    path: url.pathname,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: chatRequestBody,
  };
}

/**
 * One request per path before any timing: each must answer 200 with the same text, and every path
 * but direct (a gateway) must name the public model. A benchmark of error answers would measure the
 * wrong thing fast.
 */
export async function verifyChatPaths<P extends string = ChatPath>(
  clients: Record<P, TimedClient>,
  paths: readonly P[] = chatPaths as readonly P[],
): Promise<void> {
  for (const path of paths) {
    const answer = await clients[path].once();
    if (answer.status !== 200) throw new Error(`${path}: status ${answer.status}: ${answer.text.slice(0, 500)}`);
    const body = JSON.parse(answer.text) as { model?: unknown; choices?: { message?: { content?: unknown } }[] };
    if (body.choices?.[0]?.message?.content !== answerText) throw new Error(`${path}: unexpected answer ${answer.text.slice(0, 500)}`);
    if (path !== "direct" && body.model !== benchModel) throw new Error(`${path}: model ${String(body.model)}, expected ${benchModel}`);
  }
}
