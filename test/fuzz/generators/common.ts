import fc from "fast-check";
import type { Place } from "../bodies";
import { fuzzCase, type FuzzCase } from "../fuzz-case";
import { expectedEnvelope, type PublicRoute } from "../route-table";

/**
 * One fast-check arbitrary per class of hostile input. Each draws a route from the table and a
 * way to break its request; shrinking makes the failing request smaller (depth, size, position).
 */
export interface FuzzClass {
  name: string;
  /**
   * Whether a provider's own 4xx may come back for this class: the gateway may forward such input
   * (a string with a NUL, an unknown field) and the provider judge it. Otherwise every 4xx must be
   * the gateway's own refusal, and no upstream may have seen the request.
   */
  mayRelay: boolean;
  /** Share of the run's cases. */
  weight: number;
  arbitrary: fc.Arbitrary<FuzzCase>;
}

/** The gateway's default body limit (GATEWAY_BODY_LIMIT_MB=32), which the fuzz runs with. */
export const BODY_LIMIT = 32 * 1024 * 1024;

export const JSON_TYPE = { "content-type": "application/json" };

export const pick = <T>(items: readonly T[], i: number): T => items[i % items.length] as T;

/** A route of `routes` and one of its models (shrinks towards the first of each). */
export const routeAndModel = (routes: readonly PublicRoute[]) =>
  fc.record({ route: fc.constantFrom(...routes), m: fc.nat() }).map(({ route, m }) => ({ route, model: pick(route.models, m) ?? "" }));

export const exact = (route: PublicRoute, target = route.path) => expectedEnvelope(target, true) ?? route.envelope;

/** A known field of the route, an unknown one, or the whole body. */
export const place = (route: PublicRoute, top = true): fc.Arbitrary<Place> =>
  fc.oneof(
    fc.nat().map((i): Place => ({ at: "field", path: pick(route.fields, i) })),
    fc.constant<Place>({ at: "unknown" }),
    ...(top ? [fc.constant<Place>({ at: "top" })] : []),
  );

export const describePlace = (p: Place) =>
  p.at === "field" ? `in known field ${p.path}` : p.at === "unknown" ? "in unknown field x_fuzz" : "as the whole body";

export function jsonCase(
  cls: string,
  mayRelay: boolean,
  route: PublicRoute,
  body: Buffer,
  note: string,
  headers: Record<string, string> = JSON_TYPE,
): FuzzCase {
  return fuzzCase({ cls, mayRelay, method: route.method, target: route.path, envelope: exact(route), key: "valid", headers, body, note });
}
