import express, { type IRouter } from "express";
import type { GatewayConfig } from "@gw/config";
import { ChatCompletionRequest, internalHeaders } from "@gw/contracts";
import { fromZodError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { routeLabel, sendError } from "@gw/service-kit";
import type { Dispatcher } from "undici";
import type { Catalog } from "../catalog";
import type { CircuitBreakers } from "../circuit-breaker";
import { withFallback } from "../fallback";
import { chatOn } from "../translate/adapt";
import { clientGone, startSse, writeSse } from "./sse-writer";

export interface ChatRouteDeps {
  catalog: Catalog;
  config: GatewayConfig;
  secrets: Record<string, string | undefined>;
  agent: Dispatcher;
  bodyLimit: string;
  breakers?: CircuitBreakers;
}

export function mountChatRoutes(router: IRouter, deps: ChatRouteDeps): void {
  router.post("/v1/chat/completions", routeLabel("/v1/chat/completions"), express.json({ limit: deps.bodyLimit, type: () => true }), async (req, res) => {
    const parsed = ChatCompletionRequest.safeParse(req.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request = parsed.data;
    const model = deps.catalog.resolve(res.locals.identity!, request.model, "chat");
    const signal = clientGone(res);
    const log: Logger = res.locals.log;

    const result = await withFallback(model, request.model, { ...deps, log, signal, credentials: res.locals.credentials }, (route) =>
      chatOn(route, {
        request,
        publicModel: request.model,
        upstreamModel: route.upstreamModel,
        requestId: res.locals.requestId,
        signal,
      }),
    );
    if (!result.ok) {
      if (signal.aborted) return;
      sendError(res, result.error, req.path);
      return;
    }
    // Ingress reconciles its token-limit reservation with the real usage, then removes the field.
    if (result.kind === "json") {
      const usage = result.completion.usage;
      if (usage) res.setHeader(internalHeaders.usageTokens, String(usage.total_tokens));
      res.json(result.completion);
      return;
    }
    // A stream's usage is known only at its end, after the headers left: it goes in a trailer.
    startSse(res, [internalHeaders.usageTokens]);
    let totalTokens: number | undefined;
    const end = () => {
      if (totalTokens !== undefined) res.addTrailers({ [internalHeaders.usageTokens]: String(totalTokens) });
      res.end();
    };
    for await (const event of result.events) {
      if (event.type === "usage") {
        totalTokens = event.usage.total_tokens;
        continue;
      }
      if (event.type === "error") {
        await writeSse(res, JSON.stringify({ error: { ...event.error, param: null } }));
        end();
        return;
      }
      await writeSse(res, JSON.stringify(event.chunk));
    }
    if (!res.destroyed) {
      await writeSse(res, "[DONE]");
      end();
    }
  });
}
