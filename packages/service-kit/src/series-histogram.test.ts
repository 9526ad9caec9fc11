import { Histogram, Registry, type RegistryContentType } from "prom-client";
import { describe, expect, it } from "vitest";
import { SeriesHistogram } from "./series-histogram";

const buckets = [0.01, 0.1, 1, 10];
const labelNames = ["op", "model", "error_type"] as const;
type Label = (typeof labelNames)[number];

/** The same observations through prom-client's Histogram and through SeriesHistogram, each on its own registry. */
function twins(openMetrics = false) {
  const theirs = new Registry();
  const ours = new Registry();
  for (const registry of [theirs, ours]) {
    registry.setDefaultLabels({ service: "inference" });
    if (openMetrics) (registry as Registry<RegistryContentType>).setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  }
  const reference = new Histogram({ name: "gen_ai_x_seconds", help: 'A test\'s "histogram"', labelNames, buckets, registers: [theirs] });
  const series = new SeriesHistogram({ name: "gen_ai_x_seconds", help: 'A test\'s "histogram"', labelNames, buckets, registers: [ours] });
  const observe = (labels: Partial<Record<Label, string>>, value: number) => {
    reference.observe(labels, value);
    series.series({ ...labels }).observe(value);
  };
  return { theirs, ours, reference, series, observe };
}

describe("SeriesHistogram", () => {
  it("exports the text prom-client's Histogram exports for the same observations", async () => {
    for (const openMetrics of [false, true]) {
      const { theirs, ours, observe } = twins(openMetrics);
      const values = [0, 0.005, 0.01, 0.0100001, 0.3, 1, 9.99, 10, 11, 1e9, 0.1 + 0.2];
      for (const value of values) observe({ op: "chat", model: "gpt-4o" }, value);
      observe({ op: "chat", model: 'a "quoted"\\ name\n' }, 0.5);
      // With an error type, a series of its own (prom-client prints labels in the order given, this
      // class in labelNames' order: the same here).
      observe({ op: "chat", model: "gpt-4o", error_type: "timeout" }, 2);
      const text = await ours.metrics();
      expect(text).toBe(await theirs.metrics());
      expect(text).toContain('gen_ai_x_seconds_bucket{le="1",service="inference",op="chat",model="gpt-4o"} 7');
      expect(text).toContain('gen_ai_x_seconds_bucket{le="+Inf",service="inference",op="chat",model="gpt-4o"} 11');
    }
  });

  it("answers get() and getMetricsAsJSON as prom-client does", async () => {
    const { theirs, ours, reference, series, observe } = twins();
    observe({ op: "embeddings", model: "m" }, 0.05);
    observe({ op: "embeddings", model: "m" }, 20);
    expect(await series.get()).toEqual(await reference.get());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
  });

  it("keeps one series per label set, exported once observed and again after a reset", async () => {
    const { ours, series } = twins();
    const a = series.series({ op: "chat", model: "m" });
    expect(series.series({ model: "m", op: "chat" })).toBe(a);
    expect(series.series({ op: "chat", model: "n" })).not.toBe(a);
    expect(await ours.metrics()).not.toContain("gen_ai_x_seconds_count");
    a.observe(3);
    expect(await ours.metrics()).toContain('gen_ai_x_seconds_count{service="inference",op="chat",model="m"} 1');
    expect(await ours.metrics()).not.toContain('model="n"');
    ours.resetMetrics();
    expect(await ours.metrics()).not.toContain("gen_ai_x_seconds_count");
    a.observe(0.2);
    expect(await ours.metrics()).toContain('gen_ai_x_seconds_sum{service="inference",op="chat",model="m"} 0.2');
  });

  it("drops values that are not finite, where prom-client throws", async () => {
    const { ours, series } = twins();
    const s = series.series({ op: "chat" });
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) s.observe(bad);
    s.observe(1);
    expect(s.count).toBe(1);
    expect(await ours.metrics()).toContain('gen_ai_x_seconds_sum{service="inference",op="chat"} 1');
  });

  it("refuses names prom-client refuses", () => {
    const registers = [new Registry()];
    expect(() => new SeriesHistogram({ name: "bad-name", help: "h", labelNames: [], buckets, registers })).toThrow(/metric name/);
    expect(() => new SeriesHistogram({ name: "ok", help: "h", labelNames: ["le"], buckets, registers })).toThrow(/label name/);
    expect(() => new SeriesHistogram({ name: "ok", help: "h", labelNames: ["1x"], buckets, registers })).toThrow(/label name/);
    const h = new SeriesHistogram({ name: "ok", help: "h", labelNames: ["a"], buckets, registers });
    expect(() => h.series({ b: "x" } as never)).toThrow(/unknown label b/);
    expect(() => new SeriesHistogram({ name: "ok", help: "h", labelNames: ["a"], buckets, registers })).toThrow(/already been registered/);
  });
});
