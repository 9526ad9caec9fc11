import type { BaselineMesh } from "../baseline/baseline-checkout";
import type { BenchFlags } from "../flags";
import type { BenchGateway } from "../gateway/start-gateway";
import type { RequestTarget } from "../http-client";
import type { Table } from "../report";
import type { ChatPath } from "../targets";
import type { UpstreamProcess } from "../upstream/spawn-upstream";

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** What every scenario gets: the running upstream and mesh, and the requests to send. */
export interface BenchContext {
  flags: BenchFlags;
  upstream: UpstreamProcess;
  gateway: BenchGateway;
  /** Every process the benchmark started, by name (upstream and the four services), for CPU and memory. */
  processes: Record<string, number>;
  chat: Record<ChatPath, RequestTarget>;
  /** One line of progress on stderr (stdout carries the results). */
  progress(message: string): void;
  /** Where the breakdown hook in the services writes its rows; set only when that scenario runs. */
  breakdownPrefix?: string;
  /** The `data` of the scenarios that already ran, by name (e.g. capacity feeds the open-loop rates). */
  earlier: Record<string, Json>;
  /** The second mesh, from another checkout (--baseline); one-in-flight and spaced measure it too. */
  baseline?: BaselineMesh;
}

export interface ScenarioResult {
  /** Key of this scenario in the JSON results. */
  name: string;
  /** The headline numbers, printed after the run. */
  tables: Table[];
  /** Lines printed under the tables: warnings about the run's validity. */
  notes: string[];
  /** Everything worth keeping, written to the JSON results. */
  data: Json;
}

export interface Scenario {
  name: string;
  run(ctx: BenchContext): Promise<ScenarioResult>;
}
