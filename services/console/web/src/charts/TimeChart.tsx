import { Bar, CartesianGrid, ComposedChart, Legend, Line, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";

export interface ChartSeries {
  key: string;
  label: string;
  color: string;
  type: "bar" | "line";
  stack?: string;
  axis?: "left" | "right";
}

export interface ChartPoint {
  label: string;
  [series: string]: string | number;
}

const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });

/**
 * Usage over time (recharts: loaded with the pages that chart, never in the first chunk). The
 * caller gives the figure its caption and a table with the same numbers.
 */
export function TimeChart({
  data,
  series,
  height = 260,
  formatRight,
  formatLeft,
}: {
  data: ChartPoint[];
  series: ChartSeries[];
  height?: number;
  formatLeft?: (n: number) => string;
  formatRight?: (n: number) => string;
}) {
  const hasRight = series.some((s) => s.axis === "right");
  const format = (axis: "left" | "right") => (axis === "right" ? formatRight : formatLeft) ?? ((n: number) => compact.format(n));
  return (
    <div className="chart" aria-hidden="true">
      <ResponsiveContainer width="100%" height={height}>
        <ComposedChart data={data} margin={{ top: 8, right: hasRight ? 4 : 12, bottom: 0, left: 0 }} accessibilityLayer={false}>
          <CartesianGrid stroke="#e2e8f0" vertical={false} />
          <XAxis dataKey="label" tick={{ fontSize: 12, fill: "#475569" }} tickLine={false} axisLine={{ stroke: "#cbd5e1" }} minTickGap={16} />
          <YAxis
            yAxisId="left"
            tick={{ fontSize: 12, fill: "#475569" }}
            tickLine={false}
            axisLine={false}
            width={48}
            tickFormatter={format("left")}
            allowDecimals={false}
          />
          {hasRight && (
            <YAxis
              yAxisId="right"
              orientation="right"
              tick={{ fontSize: 12, fill: "#475569" }}
              tickLine={false}
              axisLine={false}
              width={56}
              tickFormatter={format("right")}
            />
          )}
          <Tooltip
            formatter={(value, name, item) => {
              const s = series.find((x) => x.label === name || x.key === item.dataKey);
              return [format(s?.axis ?? "left")(Number(value)), name];
            }}
          />
          <Legend wrapperStyle={{ fontSize: 13 }} />
          {series.map((s) =>
            s.type === "bar" ? (
              <Bar key={s.key} dataKey={s.key} name={s.label} fill={s.color} stackId={s.stack} yAxisId={s.axis ?? "left"} isAnimationActive={false} />
            ) : (
              <Line
                key={s.key}
                dataKey={s.key}
                name={s.label}
                stroke={s.color}
                strokeWidth={2}
                dot={false}
                yAxisId={s.axis ?? "left"}
                type="linear"
                isAnimationActive={false}
              />
            ),
          )}
        </ComposedChart>
      </ResponsiveContainer>
    </div>
  );
}
