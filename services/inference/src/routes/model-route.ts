import type { IRouter } from "express";
import type { z } from "zod";
import type { ModelType } from "@gw/config";
import { fromZodError, type GatewayError } from "@gw/errors";
import { jsonBody } from "@gw/service-kit";
import { withFallback, type RouteAttempt } from "../fallback";
import type { UpstreamCall } from "../providers/types";
import type { ChatRouteDeps } from "./chat";
import { type RouteAnswer, serveRoute } from "./route-handler";

type Outcome<T> = ({ ok: true } & T) | { ok: false; error: GatewayError };

/** One JSON model route: its path, the model type it serves, its body, its operation and its answer. */
export interface ModelRouteSpec<Req extends { model: string }, T> {
  path: string;
  type: ModelType;
  schema: z.ZodType<Req>;
  /** The operation on one route; undefined when the route's provider cannot do it. */
  call(route: RouteAttempt, call: UpstreamCall<Req>): Promise<Outcome<T>> | undefined;
  answer(result: { ok: true } & T, request: Req): RouteAnswer;
}

/**
 * Mounts a model route the way every JSON one works: the body validated (400 naming the field), the
 * model resolved against the caller's allow-lists, the routes tried with retries, fallback and the
 * workspace's own credentials, a failure in the route's envelope (none once the caller has gone).
 */
export function mountModelRoute<Req extends { model: string }, T>(router: IRouter, deps: ChatRouteDeps, spec: ModelRouteSpec<Req, T>): void {
  serveRoute(router, deps.handlers, spec.path, jsonBody(deps.bodyLimit), async (input, ctx) => {
    const parsed = spec.schema.safeParse(input.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request = parsed.data;
    const model = deps.catalog.resolve(ctx.identity, request.model, spec.type);
    const { signal, log, credentials, meter } = ctx;
    const result = await withFallback<T>(model, request.model, { ...deps, log, signal, credentials, meter }, (route) =>
      spec.call(route, {
        request,
        publicModel: request.model,
        upstreamModel: route.upstreamModel,
        requestId: ctx.requestId,
        signal,
        anthropicBeta: ctx.anthropicBeta,
      }),
    );
    return result.ok ? spec.answer(result, request) : { kind: "error", error: result.error };
  });
}
