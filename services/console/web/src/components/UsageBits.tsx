import { lazy, type ReactNode, Suspense, useId } from "react";
import { useSearchParams } from "react-router";
import type { ChartPoint, ChartSeries } from "../charts/TimeChart";
import { fmtCompact, fmtDay, fmtHour, fmtInt, fmtUsd } from "../format";
import { bucketOf, isRange, type RangeName, rangeLabels, rangeNames, type RangeQuery } from "../ranges";
import type { UsageRow } from "../types";
import { Loading } from "./States";
import { scrollable } from "./scrollable";

const TimeChart = lazy(() => import("../charts/TimeChart").then((m) => ({ default: m.TimeChart })));

/** The period in the page's URL (`?range=`), so a view can be linked. */
export function useRange(fallback: RangeName = "7d"): [RangeName, (r: RangeName) => void] {
  const [search, setSearch] = useSearchParams();
  const value = search.get("range");
  const range = isRange(value) ? value : fallback;
  return [
    range,
    (next) =>
      setSearch(
        (prev) => {
          const params = new URLSearchParams(prev);
          params.set("range", next);
          return params;
        },
        { replace: true },
      ),
  ];
}

export function RangePicker({ value, onChange }: { value: RangeName; onChange: (r: RangeName) => void }) {
  return (
    <fieldset className="segmented">
      <legend className="sr-only">Period</legend>
      {rangeNames.map((name) => (
        <button key={name} type="button" aria-pressed={value === name} onClick={() => onChange(name)}>
          {rangeLabels[name]}
        </button>
      ))}
    </fieldset>
  );
}

/** Usage rows over time as chart points, every bucket of the range present (zero when empty). */
export function timePoints(rows: readonly UsageRow[], range: RangeQuery, tz: string): (ChartPoint & { bucket: string })[] {
  const byBucket = new Map<string, UsageRow>();
  for (const row of rows) {
    const bucket = bucketOf(row);
    if (bucket !== undefined) byBucket.set(bucket, row);
  }
  return range.buckets.map((bucket) => {
    const row = byBucket.get(bucket);
    const requests = row?.requests ?? 0;
    const errors = row?.errors ?? 0;
    return {
      bucket,
      label: range.group === "hour" ? fmtHour(Number(bucket), tz) : fmtDay(bucket),
      ok: requests - errors,
      errors,
      requests,
      cost: row?.cost_usd ? Number(row.cost_usd) : 0,
      tokens: (row?.input_tokens ?? 0) + (row?.output_tokens ?? 0),
    };
  });
}

/** A chart in a figure, its caption visible and its numbers also as a table for screen readers. */
export function ChartFigure({
  caption,
  points,
  series,
  formatRight,
  height,
}: {
  caption: string;
  points: ChartPoint[];
  series: ChartSeries[];
  formatRight?: (n: number) => string;
  height?: number;
}) {
  const id = useId();
  return (
    <figure className="figure" aria-labelledby={id}>
      <figcaption id={id}>{caption}</figcaption>
      <Suspense fallback={<Loading label="Loading the chart" />}>
        <TimeChart data={points} series={series} formatRight={formatRight} height={height} />
      </Suspense>
      <details className="chart-data">
        <summary>Show the numbers</summary>
        <div className="table-wrap" {...scrollable("The chart's numbers")}>
          <table>
            <thead>
              <tr>
                <th scope="col">Period</th>
                {series.map((s) => (
                  <th scope="col" key={s.key} className="num">
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {points.map((p) => (
                <tr key={p.label}>
                  <th scope="row">{p.label}</th>
                  {series.map((s) => (
                    <td key={s.key} className="num">
                      {s.axis === "right" && formatRight ? formatRight(Number(p[s.key])) : fmtInt(Number(p[s.key]))}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

/** A key's name with its prefix below, for a table's first column. */
export function KeyName({ name, detail }: { name: string; detail?: string }) {
  return (
    <>
      <span className="block">{name}</span>
      {detail && <span className="block subtle mono small">{detail}</span>}
    </>
  );
}

/** A table of usage rows grouped by one field (model, key, day); `compact` for the overview's cards. */
export function UsageTable({
  rows,
  caption,
  first,
  firstOf,
  limit,
  compact = false,
  tall = false,
}: {
  rows: UsageRow[];
  caption: string;
  first: string;
  firstOf: (row: UsageRow) => ReactNode;
  limit?: number;
  compact?: boolean;
  /** Many rows: scroll within a set height. */
  tall?: boolean;
}) {
  const shown = limit ? rows.slice(0, limit) : rows;
  return (
    <div className={tall ? "table-wrap table-tall" : "table-wrap"} {...scrollable(caption)}>
      <table>
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">{first}</th>
            <th scope="col" className="num">
              Requests
            </th>
            <th scope="col" className="num">
              Errors
            </th>
            {compact ? (
              <th scope="col" className="num">
                Tokens
              </th>
            ) : (
              <>
                <th scope="col" className="num">
                  Input tokens
                </th>
                <th scope="col" className="num">
                  Output tokens
                </th>
              </>
            )}
            <th scope="col" className="num">
              Cost
            </th>
          </tr>
        </thead>
        <tbody>
          {shown.map((row) => (
            <tr key={`${row.day ?? row.hour ?? row.model ?? row.key_id ?? row.provider ?? row.route ?? row.status ?? ""}`}>
              <th scope="row" className="cell-name">
                {firstOf(row)}
              </th>
              <td className="num">{fmtInt(row.requests)}</td>
              <td className="num">{fmtInt(row.errors)}</td>
              {compact ? (
                <td className="num">{fmtCompact(row.input_tokens + row.output_tokens)}</td>
              ) : (
                <>
                  <td className="num">{fmtInt(row.input_tokens)}</td>
                  <td className="num">{fmtInt(row.output_tokens)}</td>
                </>
              )}
              <td className="num">{fmtUsd(row.cost_usd)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export const byRequests = (a: UsageRow, b: UsageRow) => b.requests - a.requests;
