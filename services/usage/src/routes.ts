import type { Express, Response } from "express";
import type { Identity } from "@gw/contracts";
import type { Db } from "@gw/db";
import { GatewayError } from "@gw/errors";
import { routeLabel } from "@gw/service-kit";
import type { BodyStore } from "./bodies";
import { storedText } from "./stored-text";
import { queryLogs, queryRecord } from "./queries/logs-query";
import { logsParams, statementParams, usageParams } from "./queries/params";
import { statementCsv, statementFor } from "./queries/statement";
import { queryUsage } from "./queries/usage-query";
import { forbiddenWorkspace, isOperator, workspaceScope } from "./scope";

export interface UsageRoutesDeps {
  db: Db;
  clock: () => number;
  /** Detailed logs' bodies, added to `/v1/logs/{request_id}` when kept. */
  bodies?: BodyStore;
}

/** Says which table answered a usage query (`rollups` or `records`), for the curious and the tests. */
export const usageSourceHeader = "usage-source";

const identityOf = (res: Response): Identity => res.locals.identity as Identity;

/** `/v1/usage`, `/v1/logs`, `/v1/logs/{request_id}`, `/v1/workspaces/{id}/statement`, behind the signed identity. */
export function mountUsageRoutes(app: Express, deps: UsageRoutesDeps): void {
  app.get("/v1/usage", routeLabel("/v1/usage"), async (req, res) => {
    const q = usageParams(req.query, deps.clock());
    const workspaceId = workspaceScope(identityOf(res), q.workspaceId, "forbidden");
    const { data, source } = await queryUsage(deps.db, { ...q, workspaceId });
    res.setHeader(usageSourceHeader, source);
    res.json({ object: "list", data });
  });

  app.get("/v1/logs", routeLabel("/v1/logs"), async (req, res) => {
    const q = logsParams(req.query);
    const workspaceId = workspaceScope(identityOf(res), q.workspaceId, "not_found");
    const page = await queryLogs(deps.db, { ...q, workspaceId });
    res.json({ object: "list", data: page.data, next_cursor: page.next_cursor, has_more: page.next_cursor !== null });
  });

  app.get("/v1/logs/:requestId", routeLabel("/v1/logs/{request_id}"), async (req, res) => {
    const requestId = storedText(String(req.params.requestId));
    const identity = identityOf(res);
    const record = requestId.length <= 128 ? await queryRecord(deps.db, requestId, isOperator(identity) ? undefined : identity.workspace_id) : undefined;
    if (!record) throw new GatewayError("not_found", `No request found with id ${requestId}`, { param: "request_id" });
    // Its bodies, when detailed logs captured them (and they are still kept).
    const bodies = await deps.bodies?.read(requestId, record.workspace_id, deps.clock());
    res.json(bodies ? { ...record, request_body: bodies.request, ...(bodies.response ? { response_body: bodies.response } : {}) } : record);
  });

  app.get("/v1/workspaces/:workspaceId/statement", routeLabel("/v1/workspaces/{id}/statement"), async (req, res) => {
    const q = statementParams(req.query);
    const identity = identityOf(res);
    const workspaceId = storedText(String(req.params.workspaceId));
    if (!isOperator(identity) && workspaceId !== identity.workspace_id) throw forbiddenWorkspace(workspaceId);
    const { body, statement } = await statementFor(deps.db, { workspaceId, month: q.month, tz: q.tz, now: deps.clock() });
    if (q.format === "json") {
      res.type("application/json").send(body);
      return;
    }
    const file = `statement-${workspaceId.replace(/[^A-Za-z0-9_-]/g, "_")}-${statement.month}.csv`;
    res.setHeader("content-disposition", `attachment; filename="${file}"`);
    res.type("text/csv; charset=utf-8").send(statementCsv(statement));
  });
}
