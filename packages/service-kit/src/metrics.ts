import { buildInfo } from "@gw/config";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/**
 * One registry per service (not prom-client's global one): the embedded default runs four services
 * in one process, and each keeps its own metrics.
 */
export interface ServiceMetrics {
  registry: Registry;
  requests: Counter<"route" | "method" | "status">;
  latency: Histogram<"route" | "method" | "status">;
}

const EVENT_LOOP_SAMPLE_MS = 100;

export function createMetrics(service: string, { defaults = true } = {}): ServiceMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  // The event-loop lag metric samples on a timer; prom-client's default of 10 ms wakes every
  // process 100 times a second even when idle, which on a small machine costs CPU and adds to
  // request tails. A lag worth alerting on is tens of milliseconds, which 100 ms still catches.
  if (defaults) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const requests = new Counter({
    name: "gw_http_requests_total",
    help: "HTTP requests served, by route and status",
    labelNames: ["route", "method", "status"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "gw_http_request_duration_seconds",
    help: "Time from request to the end of the response, by route and status",
    labelNames: ["route", "method", "status"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  // The usual build-info gauge: always 1, its labels say which release and commit this process runs.
  const { version, commit } = buildInfo();
  new Gauge({
    name: "gw_build_info",
    help: "The gateway's version and commit (always 1)",
    labelNames: ["version", "commit"] as const,
    registers: [registry],
  }).set({ version, commit }, 1);
  return { registry, requests, latency };
}

/** A service's own counter, registered on its registry (so services need not depend on prom-client). */
export function addCounter<L extends string>(metrics: ServiceMetrics, name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return new Counter({ name, help, labelNames, registers: [metrics.registry] });
}
