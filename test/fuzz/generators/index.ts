import type { FuzzClass } from "./common";
import { cutShort, streams } from "./connection-classes";
import { badStrings, deepNesting, hugeValues, malformedJson, protoKeys, wrongType } from "./json-classes";
import { badIds, keys, oddMethod, oddPath } from "./request-classes";
import { contentEncoding, contentType, oddHeaders, oversized } from "./transport-classes";

export { BODY_LIMIT, type FuzzClass } from "./common";

export const fuzzClasses: readonly FuzzClass[] = [
  malformedJson,
  wrongType,
  protoKeys,
  deepNesting,
  hugeValues,
  badStrings,
  contentType,
  contentEncoding,
  badIds,
  oddMethod,
  oddPath,
  keys,
  oddHeaders,
  oversized,
  streams,
  cutShort,
];

/** Runs per class for a total of `count`, by weight, at least 3 each. */
export function runsPerClass(count: number): Map<string, number> {
  const total = fuzzClasses.reduce((n, c) => n + c.weight, 0);
  return new Map(fuzzClasses.map((c) => [c.name, Math.max(3, Math.round((count * c.weight) / total))]));
}
