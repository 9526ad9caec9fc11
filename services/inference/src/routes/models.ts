import type { IRouter } from "express";
import { routeLabel } from "@gw/service-kit";
import type { Catalog } from "@gw/service-kit";

export function mountModelRoutes(router: IRouter, catalog: Catalog): void {
  router.get("/v1/models", routeLabel("/v1/models"), (_req, res) => {
    res.json({ object: "list", data: catalog.list(res.locals.identity!) });
  });
  router.get("/v1/models/:model", routeLabel("/v1/models/:model"), (req, res) => {
    res.json(catalog.get(res.locals.identity!, req.params.model as string));
  });
}
