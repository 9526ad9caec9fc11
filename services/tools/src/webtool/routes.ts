import type { IRouter } from "express";
import { WebtoolCrawlRequest, WebtoolExtractRequest, WebtoolMapRequest, WebtoolSearchRequest } from "@gw/contracts";
import { fromZodError } from "@gw/errors";
import { jsonBody, routeLabel, type CallSignal } from "@gw/service-kit";
import type { z } from "zod";
import { clientGone, onlyMethod, refuseCredentials, sendToolAnswer, sendToolFailure, setToolOutcome, type ToolRouteDeps } from "../route-kit";
import { resolveToolUpstream } from "../tool-upstream";
import type { ToolOutcome } from "../upstream/call";
import { createWebtoolClient, type WebtoolClient } from "./client";

interface WebtoolRoute<S extends z.ZodType> {
  schema: S;
  call(client: WebtoolClient, request: z.infer<S>, signal: CallSignal): Promise<ToolOutcome<unknown>>;
}

const route = <S extends z.ZodType>(r: WebtoolRoute<S>) => r;

/** The four synchronous web-tool operations; research is the jobs service's (issue 6). */
const routes = {
  search: route({ schema: WebtoolSearchRequest, call: (c, r, signal) => c.search(r, { signal }) }),
  extract: route({ schema: WebtoolExtractRequest, call: (c, r, signal) => c.extract(r, { signal }) }),
  crawl: route({ schema: WebtoolCrawlRequest, call: (c, r, signal) => c.crawl(r, { signal }) }),
  map: route({ schema: WebtoolMapRequest, call: (c, r, signal) => c.map(r, { signal }) }),
};

/**
 * `POST /v1/tools/webtool/{search,extract,crawl,map}`: Tavily's request bodies (credentials refused,
 * bounds checked, other options passed through), answered in Tavily's shape without its usage fields.
 */
export function mountWebtoolRoutes(router: IRouter, deps: ToolRouteDeps): void {
  for (const [name, spec] of Object.entries(routes) as [keyof typeof routes, WebtoolRoute<z.ZodType>][]) {
    const path = `/v1/tools/webtool/${name}`;
    router.post(path, routeLabel(path), jsonBody(deps.bodyLimit), async (req, res) => {
      refuseCredentials(req.query, "query");
      refuseCredentials(req.body, "body");
      const parsed = spec.schema.safeParse(req.body);
      if (!parsed.success) throw fromZodError(parsed.error);
      const upstream = resolveToolUpstream(deps.gateway, deps.secrets, "webtool", res.locals.credentials);
      if (!upstream.ok) throw upstream.error;
      const signal = clientGone(res);
      const started = performance.now();
      const result = await spec.call(createWebtoolClient(upstream.value, deps.agent, deps.retry), parsed.data, signal);
      if (signal.aborted) return;
      setToolOutcome(res, "webtool", started, result.ok);
      if (!result.ok) return sendToolFailure(res, req.path, "webtool", result.error);
      sendToolAnswer(res, result.value, upstream.value.apiKey);
    });
    router.all(path, routeLabel(path), onlyMethod("POST"));
  }
}
