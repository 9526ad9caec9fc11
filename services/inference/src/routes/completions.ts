import express, { type IRouter } from "express";
import { CompletionRequest, internalHeaders } from "@gw/contracts";
import { fromZodError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { routeLabel, sendError } from "@gw/service-kit";
import { withFallback } from "../fallback";
import type { ChatRouteDeps } from "./chat";
import { clientGone, startSse, writeSse } from "./sse-writer";

/**
 * `POST /v1/completions`, OpenAI's legacy text completions, for `completion` models. Usage goes to
 * ingress as a header (JSON) or a trailer (stream), as on the chat route.
 */
export function mountCompletionsRoutes(router: IRouter, deps: ChatRouteDeps): void {
  router.post("/v1/completions", routeLabel("/v1/completions"), express.json({ limit: deps.bodyLimit, type: () => true }), async (req, res) => {
    const parsed = CompletionRequest.safeParse(req.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request = parsed.data;
    const model = deps.catalog.resolve(res.locals.identity!, request.model, "completion");
    const signal = clientGone(res);
    const log: Logger = res.locals.log;

    const result = await withFallback(model, request.model, { ...deps, log, signal, credentials: res.locals.credentials }, ({ adapter, ctx, upstreamModel }) =>
      adapter.completions?.(ctx, { request, publicModel: request.model, upstreamModel, requestId: res.locals.requestId, signal }),
    );
    if (!result.ok) {
      if (signal.aborted) return;
      sendError(res, result.error, req.path);
      return;
    }
    if (result.kind === "json") {
      const usage = result.completion.usage;
      if (usage) res.setHeader(internalHeaders.usageTokens, String(usage.total_tokens));
      res.json(result.completion);
      return;
    }
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
