import type { IRouter } from "express";
import { SerptoolSearchQuery } from "@gw/contracts";
import { fromZodError } from "@gw/errors";
import { routeLabel } from "@gw/service-kit";
import { clientGone, onlyMethod, refuseCredentials, sendToolAnswer, sendToolFailure, setToolOutcome, type ToolRouteDeps } from "../route-kit";
import { resolveToolUpstream } from "../tool-upstream";
import { createSerptoolClient } from "./client";

const path = "/v1/tools/serptool/search";

/**
 * `GET /v1/tools/serptool/search?q=…&engine=…&…`: SerpAPI's query parameters (credentials refused,
 * `num` bounded, JSON only), answered in SerpAPI's shape without its account internals.
 */
export function mountSerptoolRoutes(router: IRouter, deps: ToolRouteDeps): void {
  router.get(path, routeLabel(path), async (req, res) => {
    refuseCredentials(req.query, "query");
    const parsed = SerptoolSearchQuery.safeParse(req.query);
    if (!parsed.success) throw fromZodError(parsed.error, "query");
    const upstream = resolveToolUpstream(deps.gateway, deps.secrets, "serptool", res.locals.credentials);
    if (!upstream.ok) throw upstream.error;
    const signal = clientGone(res);
    const started = performance.now();
    const result = await createSerptoolClient(upstream.value, deps.agent, deps.retry).search(parsed.data, { signal });
    if (signal.aborted) return;
    setToolOutcome(res, "serptool", started, result.ok);
    if (!result.ok) return sendToolFailure(res, req.path, "serptool", result.error);
    sendToolAnswer(res, result.value, upstream.value.apiKey);
  });
  router.all(path, routeLabel(path), onlyMethod("GET"));
}
