import type { IRouter, Response } from "express";
import type { z } from "zod";
import type { ModelType } from "@gw/config";
import { fromZodError, type GatewayError } from "@gw/errors";
import type { Logger } from "@gw/logger";
import { clientGone, jsonBody, routeLabel, sendError } from "@gw/service-kit";
import { withFallback, type RouteAttempt } from "../fallback";
import type { UpstreamCall } from "../providers/types";
import { meterOf, setOutcomeHeader } from "../usage/call-meter";
import type { ChatRouteDeps } from "./chat";

type Outcome<T> = ({ ok: true } & T) | { ok: false; error: GatewayError };

/** One JSON model route: its path, the model type it serves, its body, its operation and its answer. */
export interface ModelRouteSpec<Req extends { model: string }, T> {
  path: string;
  type: ModelType;
  schema: z.ZodType<Req>;
  /** The operation on one route; undefined when the route's provider cannot do it. */
  call(route: RouteAttempt, call: UpstreamCall<Req>): Promise<Outcome<T>> | undefined;
  respond(res: Response, result: { ok: true } & T, request: Req): Promise<void> | void;
}

/**
 * Mounts a model route the way every JSON one works: the body validated (400 naming the field), the
 * model resolved against the caller's allow-lists, the routes tried with retries, fallback and the
 * workspace's own credentials, a failure in the route's envelope (none once the caller has gone).
 */
export function mountModelRoute<Req extends { model: string }, T>(router: IRouter, deps: ChatRouteDeps, spec: ModelRouteSpec<Req, T>): void {
  router.post(spec.path, routeLabel(spec.path), jsonBody(deps.bodyLimit), async (req, res) => {
    const parsed = spec.schema.safeParse(req.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const request = parsed.data;
    const model = deps.catalog.resolve(res.locals.identity!, request.model, spec.type);
    const signal = clientGone(res);
    const log: Logger = res.locals.log;
    const meter = meterOf(res);
    const result = await withFallback<T>(model, request.model, { ...deps, log, signal, credentials: res.locals.credentials, meter }, (route) =>
      spec.call(route, {
        request,
        publicModel: request.model,
        upstreamModel: route.upstreamModel,
        requestId: res.locals.requestId,
        signal,
        anthropicBeta: req.get("anthropic-beta"),
      }),
    );
    if (!result.ok) {
      setOutcomeHeader(res);
      if (!signal.aborted) sendError(res, result.error, req.path);
      return;
    }
    await spec.respond(res, result, request);
  });
}
