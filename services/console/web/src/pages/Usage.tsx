import { useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { API, get, wsPath } from "../api";
import { ChartFigure, KeyName, RangePicker, UsageTable, byRequests, timePoints, useRange } from "../components/UsageBits";
import { Empty, ErrorBox, Loading, Notice } from "../components/States";
import { fmtDateTime, fmtDay, fmtInt, fmtMonth, fmtUsd, zoneLabel } from "../format";
import { sumRows, useKeyLabel, useKeyParts, useUsage } from "../hooks";
import { addMonths, monthIn, rangeLabels, rangeQuery } from "../ranges";
import type { BudgetLine, BudgetStatus, Statement } from "../types";
import { usePageTitle, useWorkspace } from "../workspace";
import { scrollable } from "../components/scrollable";

/** Usage by day, model and key; the month's statement with its CSV; budget progress. */
export function Usage() {
  const { workspace, can } = useWorkspace();
  usePageTitle(`Usage & billing · ${workspace.name}`);
  return (
    <section className="page" aria-labelledby="usage-title">
      <div className="page-header">
        <div>
          <h1 id="usage-title">Usage &amp; billing</h1>
          <p className="subtle">Months and days are counted in {zoneLabel(workspace.timezone || "UTC")}.</p>
        </div>
      </div>
      {can("budgets.read") && <BudgetSection />}
      {can("usage.read") && <UsageSection />}
      {can("statements.read") && <StatementSection />}
    </section>
  );
}

function UsageSection() {
  const { tz } = useWorkspace();
  const [range, setRange] = useRange("30d");
  const q = useMemo(() => rangeQuery(range, tz), [range, tz]);
  const byTime = useUsage({ from: q.from, to: q.to, group_by: q.group });
  const byModel = useUsage({ from: q.from, to: q.to, group_by: "model" });
  const byKey = useUsage({ from: q.from, to: q.to, group_by: "key" });
  const keyParts = useKeyParts();
  const points = useMemo(() => timePoints(byTime.data ?? [], q, tz), [byTime.data, q, tz]);
  const total = sumRows(byTime.data ?? []);
  const timeLabel = q.group === "hour" ? "Hour" : "Day";

  return (
    <section className="card" aria-labelledby="usage-section">
      <div className="card-header">
        <h2 id="usage-section">Usage</h2>
        <RangePicker value={range} onChange={setRange} />
      </div>
      {byTime.isPending ? (
        <Loading label="Loading usage" />
      ) : byTime.isError ? (
        <ErrorBox error={byTime.error} retry={() => void byTime.refetch()} />
      ) : byTime.data.length === 0 ? (
        <Empty title={`No usage in the period (${rangeLabels[range].toLowerCase()})`}>
          <p>No requests yet — create a key and call the API.</p>
        </Empty>
      ) : (
        <>
          <p>
            <strong>{fmtInt(total.requests)}</strong> requests, <strong>{fmtUsd(total.priced ? total.cost : null)}</strong> {rangeLabels[range].toLowerCase()}.
          </p>
          <ChartFigure
            caption={`Cost and requests ${q.group === "hour" ? "per hour" : "per day"}, ${rangeLabels[range].toLowerCase()}`}
            points={points}
            series={[
              { key: "cost", label: "Cost (USD)", color: "#0f766e", type: "bar", axis: "right" },
              { key: "requests", label: "Requests", color: "#2563eb", type: "line" },
            ]}
            formatRight={(n) => fmtUsd(n)}
            height={240}
          />
          <h3>By {timeLabel.toLowerCase()}</h3>
          <UsageTable
            rows={byTime.data}
            caption={`Usage by ${timeLabel.toLowerCase()}`}
            first={timeLabel}
            tall
            firstOf={(r) => (r.day ? fmtDay(r.day) : r.hour ? fmtDateTime(r.hour, tz) : "—")}
          />
          <h3>By model</h3>
          {byModel.isPending ? (
            <Loading label="Loading usage by model" />
          ) : byModel.isError ? (
            <ErrorBox error={byModel.error} />
          ) : (
            <UsageTable rows={[...byModel.data].sort(byRequests)} caption="Usage by model" first="Model" firstOf={(r) => r.model ?? "(no model)"} />
          )}
          <h3>By key</h3>
          {byKey.isPending ? (
            <Loading label="Loading usage by key" />
          ) : byKey.isError ? (
            <ErrorBox error={byKey.error} />
          ) : (
            <UsageTable rows={[...byKey.data].sort(byRequests)} caption="Usage by key" first="Key" firstOf={(r) => <KeyName {...keyParts(r.key_id)} />} />
          )}
        </>
      )}
    </section>
  );
}

function StatementSection() {
  const { ws, tz } = useWorkspace();
  const current = monthIn(tz);
  const months = Array.from({ length: 13 }, (_, i) => addMonths(current, -i));
  const [month, setMonth] = useState(current);
  const statement = useQuery({
    queryKey: ["statement", ws, month],
    queryFn: () => get<Statement>(wsPath(ws, "/statement"), { month }),
  });
  const csv = `${API}${wsPath(ws, "/statement")}?month=${encodeURIComponent(month)}&format=csv`;
  return (
    <section className="card" aria-labelledby="statement-section">
      <div className="card-header">
        <h2 id="statement-section">Monthly statement</h2>
        <div className="field field-inline">
          <label htmlFor="statement-month">Month</label>
          <select id="statement-month" className="select" value={month} onChange={(e) => setMonth(e.target.value)}>
            {months.map((m) => (
              <option key={m} value={m}>
                {fmtMonth(m)}
              </option>
            ))}
          </select>
        </div>
        <a className="btn btn-small" href={csv} download={`statement-${ws}-${month}.csv`}>
          Download CSV<span className="sr-only"> for {fmtMonth(month)}</span>
        </a>
      </div>
      {statement.isPending ? (
        <Loading label="Loading the statement" />
      ) : statement.isError ? (
        <ErrorBox error={statement.error} retry={() => void statement.refetch()} />
      ) : (
        <>
          <p>
            {fmtMonth(statement.data.month)}:{" "}
            <span className={`badge ${statement.data.status === "closed" ? "badge-muted" : "badge-info"}`}>
              {statement.data.status === "closed" ? "closed" : "open, still changing"}
            </span>{" "}
            · {fmtInt(statement.data.requests)} requests
            {statement.data.unpriced_requests > 0 && <> · {fmtInt(statement.data.unpriced_requests)} without a price (not billed)</>}
          </p>
          {statement.data.lines.length === 0 ? (
            <Empty title="Nothing billed this month" />
          ) : (
            <div className="table-wrap" {...scrollable(`Statement lines for ${fmtMonth(statement.data.month)}`)}>
              <table>
                <caption className="sr-only">Statement lines for {fmtMonth(statement.data.month)}</caption>
                <thead>
                  <tr>
                    <th scope="col">Model or tool</th>
                    <th scope="col">Item</th>
                    <th scope="col" className="num">
                      Units
                    </th>
                    <th scope="col" className="num">
                      Unit price
                    </th>
                    <th scope="col" className="num">
                      Amount
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {statement.data.lines.map((line) => (
                    <tr key={`${line.model ?? line.tool}-${line.item}-${line.unit}-${line.unit_price_usd}`}>
                      <th scope="row" className="mono cell-name">
                        {line.model ?? line.tool ?? "—"}
                      </th>
                      <td>
                        {line.item} <span className="subtle">({line.unit})</span>
                      </td>
                      <td className="num">{Number(line.units).toLocaleString()}</td>
                      <td className="num">${line.unit_price_usd}</td>
                      <td className="num">{fmtUsd(line.amount_usd)}</td>
                    </tr>
                  ))}
                </tbody>
                <tfoot>
                  <tr>
                    <th scope="row" colSpan={4}>
                      Total
                    </th>
                    <td className="num strong">{fmtUsd(statement.data.total_usd)}</td>
                  </tr>
                </tfoot>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}

function BudgetSection() {
  const { ws, tz } = useWorkspace();
  const keyLabel = useKeyLabel();
  const status = useQuery({ queryKey: ["budget", ws], queryFn: () => get<BudgetStatus>(wsPath(ws, "/budget")) });
  return (
    <section className="card" aria-labelledby="budget-section">
      <h2 id="budget-section">Budget this month</h2>
      {status.isPending ? (
        <Loading label="Loading the budget" />
      ) : status.isError ? (
        <ErrorBox error={status.error} retry={() => void status.refetch()} />
      ) : (
        <>
          <p className="subtle">
            {fmtMonth(status.data.period)} · resets {fmtDateTime(status.data.resets_at, tz)}
          </p>
          {status.data.workspace.budget ? (
            <BudgetBar label="Workspace" line={status.data.workspace} />
          ) : (
            <Notice>
              <p>The workspace has no monthly budget.</p>
            </Notice>
          )}
          {status.data.keys.length > 0 && (
            <>
              <h3>Keys with a budget</h3>
              {status.data.keys.map((k) => (
                <BudgetBar key={k.key_id} label={keyLabel(k.key_id)} line={k} />
              ))}
            </>
          )}
        </>
      )}
    </section>
  );
}

function BudgetBar({ label, line }: { label: string; line: BudgetLine }) {
  if (!line.budget) return null;
  const limit = line.budget.monthly_usd;
  const spent = Number(line.spent_usd ?? 0);
  const held = Number(line.held_usd ?? 0);
  const used = spent + held;
  const pct = limit > 0 ? Math.min(100, (used / limit) * 100) : 0;
  const alert = line.budget.alert_at_percent;
  const tone = pct >= 100 ? "bar-error" : alert !== undefined && pct >= alert ? "bar-warn" : "bar-ok";
  const text = `${fmtUsd(spent)} spent${held > 0 ? ` + ${fmtUsd(held)} held` : ""} of ${fmtUsd(limit)} (${pct.toFixed(pct < 10 ? 1 : 0)}%)`;
  return (
    <div className="budget">
      <div className="budget-head">
        <span className="strong">{label}</span>
        <span>
          {line.spent_usd === null ? "No spend counted yet this month" : text} · {line.budget.mode === "hard" ? "hard limit" : "soft (alerts only)"}
          {alert !== undefined && ` · alert at ${alert}%`}
        </span>
      </div>
      <div
        className={`bar ${tone}`}
        role="progressbar"
        aria-label={`${label} budget used`}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={Math.round(pct)}
        aria-valuetext={text}
      >
        <div className="bar-fill" style={{ width: `${pct}%` }} />
        {alert !== undefined && <div className="bar-mark" style={{ left: `${alert}%` }} aria-hidden="true" />}
      </div>
      {line.remaining_usd !== null && <p className="hint">{fmtUsd(line.remaining_usd)} left</p>}
    </div>
  );
}
