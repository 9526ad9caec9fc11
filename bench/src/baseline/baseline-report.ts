import { meshServices, type MeshServiceName } from "../../../services/embedded/src/mesh-processes";
import { percentileDifference, reportedPercentiles, type LatencySummary, type PercentileKey } from "../histogram";
import { round3 } from "../interleaved-run";
import { formatMs, type Table } from "../report";
import { baselineProcessPrefix, type BaselineCheckout } from "./baseline-checkout";

export type BaselinePath = "direct" | "gateway" | "baseline";
export const baselinePaths: readonly BaselinePath[] = ["direct", "gateway", "baseline"];

type Difference = Record<PercentileKey, number>;
/** One mesh's four services, µs per request, and their sum. */
type ServicesCpu = Record<MeshServiceName | "total", number>;

/** What a three-path run says about this tree against the baseline (a type, so it fits Json). */
export type BaselineComparison = {
  latencyMs: Record<BaselinePath, LatencySummary>;
  gatewayMinusDirectMs: Difference;
  baselineMinusDirectMs: Difference;
  /** This tree's added latency minus the baseline's: the change's cost (negative: a saving). */
  gatewayMinusBaselineMs: Difference;
  /** Every process while each path's blocks ran; the baseline's services as `baseline:<name>`. */
  cpuMicrosPerRequest: Record<BaselinePath, Record<string, number>>;
  /** Each mesh's services while its own path ran. */
  servicesCpuMicrosPerRequest: MeshesCpu;
  /**
   * Each mesh's services over the whole run, per request of its own path: all of a mesh's work,
   * including what it did after its blocks had ended (a usage batch published a second later).
   */
  wholeRunServicesCpuMicrosPerRequest?: MeshesCpu;
};

type MeshesCpu = { gateway: ServicesCpu; baseline: ServicesCpu; gatewayMinusBaseline: number };

function meshesCpu(reading: Record<string, number>): MeshesCpu {
  const gateway = servicesCpu(reading, "");
  const baseline = servicesCpu(reading, baselineProcessPrefix);
  return { gateway, baseline, gatewayMinusBaseline: gateway.total - baseline.total };
}

/**
 * Latency summaries (ms) and CPU per request (µs) by path, as a scenario measured them; `wholeRun`:
 * each process's CPU over the whole run divided by the requests of one path.
 */
export function compareWithBaseline(
  latency: Record<BaselinePath, LatencySummary>,
  cpu: Record<BaselinePath, Record<string, number>>,
  wholeRun?: Record<string, number>,
): BaselineComparison {
  const rounded = (d: Difference): Difference => ({ p50: round3(d.p50), p90: round3(d.p90), p99: round3(d.p99) });
  const gateway = servicesCpu(cpu.gateway, "");
  const baseline = servicesCpu(cpu.baseline, baselineProcessPrefix);
  return {
    latencyMs: latency,
    gatewayMinusDirectMs: rounded(percentileDifference(latency.gateway, latency.direct)),
    baselineMinusDirectMs: rounded(percentileDifference(latency.baseline, latency.direct)),
    gatewayMinusBaselineMs: rounded(percentileDifference(latency.gateway, latency.baseline)),
    cpuMicrosPerRequest: cpu,
    servicesCpuMicrosPerRequest: { gateway, baseline, gatewayMinusBaseline: gateway.total - baseline.total },
    ...(wholeRun ? { wholeRunServicesCpuMicrosPerRequest: meshesCpu(wholeRun) } : {}),
  };
}

function servicesCpu(reading: Record<string, number>, prefix: string): ServicesCpu {
  const values = Object.fromEntries(meshServices.map((name) => [name, reading[`${prefix}${name}`] ?? 0])) as Record<MeshServiceName, number>;
  return { ...values, total: meshServices.reduce((sum, name) => sum + values[name], 0) };
}

/**
 * The latency table (three paths, what each gateway adds over direct, and gateway − baseline) and
 * the CPU table (each row's services are the mesh that answered that path).
 */
export function baselineTables(comparison: BaselineComparison, title: string, checkout: BaselineCheckout): Table[] {
  const { latencyMs: latency } = comparison;
  const row = (label: string, s: LatencySummary) => [label, formatMs(s.p50), formatMs(s.p90), formatMs(s.p99), formatMs(s.max), formatMs(s.mean)];
  const difference = (label: string, d: Difference) => [label, ...reportedPercentiles.map((p) => formatMs(d[`p${p}`], true)), "", ""];
  const latencyTable: Table = {
    title: `${title}; baseline = ${checkout.commit}${checkout.dirty ? " with uncommitted changes" : ""} (ms)`,
    columns: ["path", "p50", "p90", "p99", "max", "mean"],
    rows: [
      row("direct", latency.direct),
      row("gateway", latency.gateway),
      row("baseline", latency.baseline),
      difference("gateway − direct", comparison.gatewayMinusDirectMs),
      difference("baseline − direct", comparison.baselineMinusDirectMs),
      difference("gateway − baseline", comparison.gatewayMinusBaselineMs),
    ],
  };

  const cpu = comparison.cpuMicrosPerRequest;
  const cells = (values: Record<string, number>, services: ServicesCpu) => [
    values.bench ?? 0,
    values.upstream ?? 0,
    ...meshServices.map((name) => services[name]),
    services.total,
  ];
  const direct = cells(cpu.direct, servicesCpu(cpu.direct, ""));
  const gateway = cells(cpu.gateway, comparison.servicesCpuMicrosPerRequest.gateway);
  const baseline = cells(cpu.baseline, comparison.servicesCpuMicrosPerRequest.baseline);
  const signed = (n: number) => (n >= 0 ? `+${n}` : String(n));
  const whole = comparison.wholeRunServicesCpuMicrosPerRequest;
  const wholeCells = (services: ServicesCpu) => ["", "", ...meshServices.map((name) => services[name]), services.total];
  const wholeRows = whole
    ? [
        ["gateway, whole run", ...wholeCells(whole.gateway)],
        ["baseline, whole run", ...wholeCells(whole.baseline)],
        [
          "gateway − baseline, whole run",
          "",
          "",
          ...meshServices.map((name) => signed(whole.gateway[name] - whole.baseline[name])),
          signed(whole.gatewayMinusBaseline),
        ],
      ]
    : [];
  const cpuTable: Table = {
    title:
      "CPU per request (µs; bench = the client; services: the mesh that answered, this tree's for direct (idle) and gateway, " +
      "the baseline's for baseline; whole run: each mesh's services over every block, per request of its path; threads' run times from /proc)",
    columns: ["path", "bench", "upstream", ...meshServices, "services"],
    rows: [
      ["direct", ...direct],
      ["gateway", ...gateway],
      ["baseline", ...baseline],
      ["gateway − baseline", ...gateway.map((value, i) => signed(value - (baseline[i] ?? 0)))],
      ...wholeRows,
    ],
  };
  return [latencyTable, cpuTable];
}
