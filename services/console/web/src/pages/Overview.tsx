import { useMemo } from "react";
import { Link } from "react-router";
import { ChartFigure, KeyName, RangePicker, UsageTable, byRequests, timePoints, useRange } from "../components/UsageBits";
import { Empty, ErrorBox, Loading } from "../components/States";
import { fmtCompact, fmtInt, fmtMs, fmtPercent, fmtUsd, zoneLabel } from "../format";
import { useKeyParts, useUsage } from "../hooks";
import { rangeLabels, rangeQuery } from "../ranges";
import { usePageTitle, useWorkspace } from "../workspace";

/** The workspace at a glance: totals, a chart over time, top models and keys, for a chosen period. */
export function Overview() {
  const { workspace, tz, can, ws } = useWorkspace();
  usePageTitle(`Overview · ${workspace.name}`);
  const [range, setRange] = useRange("7d");
  // The period is fixed when the range is chosen (not at every render), so queries stay cached.
  const q = useMemo(() => rangeQuery(range, tz), [range, tz]);
  const totals = useUsage({ from: q.from, to: q.to });
  const series = useUsage({ from: q.from, to: q.to, group_by: q.group });
  const models = useUsage({ from: q.from, to: q.to, group_by: "model" });
  const keys = useUsage({ from: q.from, to: q.to, group_by: "key" });
  const keyParts = useKeyParts();

  const total = totals.data?.[0];
  const points = useMemo(() => timePoints(series.data ?? [], q, tz), [series.data, q, tz]);
  const empty = totals.isSuccess && (!total || total.requests === 0);

  return (
    <section className="page" aria-labelledby="overview-title">
      <div className="page-header">
        <div>
          <h1 id="overview-title">Overview</h1>
          <p className="subtle">
            {workspace.name} · {rangeLabels[range]} · times in {zoneLabel(tz)}
          </p>
        </div>
        <RangePicker value={range} onChange={setRange} />
      </div>

      {totals.isPending ? (
        <Loading label="Loading usage" />
      ) : totals.isError ? (
        <ErrorBox error={totals.error} retry={() => void totals.refetch()} />
      ) : empty ? (
        <Empty title="No requests in this period">
          <p>
            No requests yet — create a key and call the API; requests show up here within seconds.{" "}
            {can("keys.read") && <Link to={`/w/${encodeURIComponent(ws)}/keys`}>Go to keys</Link>}
          </p>
        </Empty>
      ) : (
        total && (
          <dl className="stats">
            <div className="stat">
              <dt>Requests</dt>
              <dd>{fmtInt(total.requests)}</dd>
            </div>
            <div className="stat">
              <dt>Tokens</dt>
              <dd title={`${fmtInt(total.input_tokens)} in, ${fmtInt(total.output_tokens)} out`}>{fmtCompact(total.input_tokens + total.output_tokens)}</dd>
              <dd className="stat-sub">
                {fmtCompact(total.input_tokens)} in · {fmtCompact(total.output_tokens)} out
              </dd>
            </div>
            <div className="stat">
              <dt>Cost</dt>
              <dd>{fmtUsd(total.cost_usd)}</dd>
            </div>
            <div className="stat">
              <dt>Error rate</dt>
              <dd>{fmtPercent(total.errors, total.requests)}</dd>
              <dd className="stat-sub">{fmtInt(total.errors)} errors</dd>
            </div>
            <div className="stat">
              <dt>Latency p50</dt>
              <dd>{fmtMs(total.latency_ms_p50)}</dd>
            </div>
            <div className="stat">
              <dt>Latency p95</dt>
              <dd>{fmtMs(total.latency_ms_p95)}</dd>
            </div>
          </dl>
        )
      )}

      {!empty && (
        <>
          <div className="card">
            <h2>Requests {q.group === "hour" ? "by hour" : "by day"}</h2>
            {series.isPending ? (
              <Loading label="Loading the chart" />
            ) : series.isError ? (
              <ErrorBox error={series.error} retry={() => void series.refetch()} />
            ) : (
              <ChartFigure
                caption={`Successful requests and errors ${q.group === "hour" ? "per hour" : "per day"}, with cost, ${rangeLabels[range].toLowerCase()}`}
                points={points}
                series={[
                  { key: "ok", label: "Successful", color: "#2563eb", type: "bar", stack: "r" },
                  { key: "errors", label: "Errors", color: "#dc2626", type: "bar", stack: "r" },
                  { key: "cost", label: "Cost (USD)", color: "#0f766e", type: "line", axis: "right" },
                ]}
                formatRight={(n) => fmtUsd(n)}
              />
            )}
          </div>

          <div className="grid-2">
            <div className="card">
              <h2>Top models</h2>
              {models.isPending ? (
                <Loading label="Loading models" />
              ) : models.isError ? (
                <ErrorBox error={models.error} />
              ) : models.data.length === 0 ? (
                <Empty title="No model calls in this period" />
              ) : (
                <UsageTable
                  rows={[...models.data].sort(byRequests)}
                  caption="Top models by requests"
                  first="Model"
                  firstOf={(r) => <span className="mono">{r.model ?? "(no model)"}</span>}
                  limit={5}
                  compact
                />
              )}
            </div>
            <div className="card">
              <h2>Top keys</h2>
              {keys.isPending ? (
                <Loading label="Loading keys" />
              ) : keys.isError ? (
                <ErrorBox error={keys.error} />
              ) : keys.data.length === 0 ? (
                <Empty title="No key was used in this period" />
              ) : (
                <UsageTable
                  rows={[...keys.data].sort(byRequests)}
                  caption="Top keys by requests"
                  first="Key"
                  firstOf={(r) => <KeyName {...keyParts(r.key_id)} />}
                  limit={5}
                  compact
                />
              )}
            </div>
          </div>
        </>
      )}
    </section>
  );
}
