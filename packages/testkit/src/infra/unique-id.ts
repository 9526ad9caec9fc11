import { randomInt } from "node:crypto";

/**
 * Lowercase alphanumeric, time first: names made in one run sort together and stale leftovers are
 * easy to spot; the random tail keeps parallel workers apart.
 */
export function uniqueId(): string {
  return `${Date.now().toString(36)}${randomInt(36 ** 6)
    .toString(36)
    .padStart(6, "0")}`;
}
