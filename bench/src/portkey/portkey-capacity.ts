import type { RequestTarget } from "../http-client";
import { formatMs, type Table } from "../report";
import { findCapacity, type CapacityResult } from "../scenarios/capacity";
import type { BenchContext, Json } from "../scenarios/scenario";

/** The gateway's capacity from the capacity scenario of this run, when it ran. */
function gatewayCapacity(earlier: BenchContext["earlier"]): number | undefined {
  const capacity = earlier.capacity as { gateway?: { rps?: unknown } } | undefined;
  return typeof capacity?.gateway?.rps === "number" ? capacity.gateway.rps : undefined;
}

/**
 * The capacity search of the capacity scenario, run against Portkey on the same upstream, and set
 * beside the gateway's figure from the same run: the throughput ratio the goal is stated in.
 */
export async function measurePortkeyCapacity(
  target: RequestTarget,
  ctx: Pick<BenchContext, "earlier" | "progress">,
): Promise<{ table: Table; data: Json; result: CapacityResult }> {
  const result = await findCapacity(target, {
    onStep: (s) => ctx.progress(`portkey capacity: ${s.rps} rps: p99 ${formatMs(s.p99)} ms, ${s.verdict}`),
  });
  const gateway = gatewayCapacity(ctx.earlier);
  const ratio = gateway !== undefined && result.rps > 0 ? Math.round((gateway / result.rps) * 100) / 100 : null;
  const ms = (x: number | null) => (x === null ? "" : formatMs(x));
  return {
    result,
    table: {
      title: "capacity, gateway and Portkey: highest open-loop rate with p99 < 10 ms and no errors (requests/s)",
      columns: ["path", "rps", "failed at", "p50", "p99", "gateway ÷ portkey"],
      rows: [
        ["portkey", result.capped ? `≥ ${result.rps}` : result.rps, result.failedAt ?? "", ms(result.p50), ms(result.p99), ""],
        ["gateway (capacity scenario)", gateway ?? "not run", "", "", "", ratio === null ? "n/a" : `${ratio.toFixed(2)}×`],
      ],
    },
    data: {
      portkey: { rps: result.rps, p50: result.p50, p99: result.p99, capped: result.capped, failedAt: result.failedAt },
      gatewayRps: gateway ?? null,
      gatewayOverPortkey: ratio,
      steps: result.steps as unknown as Json,
    },
  };
}
