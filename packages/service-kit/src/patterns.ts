/**
 * Allow-lists are lists of names with "*" globs. A caller's access is the workspace's list narrowed
 * by the key's: a name is allowed when it matches a pattern of every list.
 */

/** Counts the characters of the name a match compares, so tests can show the work is linear. */
export interface MatchMeter {
  steps: number;
}

/** What `.` does not match in a RegExp without the `s` flag, as globs were once compiled. */
const lineBreak = /[\n\r\u2028\u2029]/;
const lineBreaks = /([\n\r\u2028\u2029])/;

/**
 * `*` stands for any run of characters other than line breaks. Matched without a RegExp, since
 * `^a.*b.*c$` backtracks polynomially on long names; the work is linear in the name's length.
 */
export function matchesPattern(pattern: string, name: string, meter?: MatchMeter): boolean {
  if (pattern === "*") return true;
  if (!pattern.includes("*")) return pattern === name;
  if (!globMatch(pattern, name, meter)) return false;
  // Rare: a name holding a line break. No `*` spans one, so each line must match on its own.
  return !lineBreak.test(name) || linesMatch(pattern, name, meter);
}

export function allowedByAll(lists: readonly (readonly string[])[], name: string): boolean {
  return lists.every((list) => list.some((pattern) => matchesPattern(pattern, name)));
}

/**
 * The part before the first `*` is a prefix, the part after the last one a suffix, and the parts in
 * between are found left to right, each at its leftmost place after the previous one. Leftmost is
 * always right for `*`: a later place would only leave less room for the parts after it.
 */
function globMatch(pattern: string, name: string, meter: MatchMeter | undefined): boolean {
  const first = pattern.indexOf("*");
  if (first < 0) return pattern === name;
  const last = pattern.lastIndexOf("*");
  const suffixLength = pattern.length - last - 1;
  if (name.length < first + suffixLength) return false;
  if (meter) meter.steps += first + suffixLength;
  if (!name.startsWith(pattern.slice(0, first)) || !name.endsWith(pattern.slice(last + 1))) return false;
  const end = name.length - suffixLength;
  let at = first;
  for (let start = first + 1; start <= last; ) {
    const stop = pattern.indexOf("*", start);
    if (stop > start) {
      const part = pattern.slice(start, stop);
      const found = name.indexOf(part, at);
      // A search examines at most `part.length` characters at each place it tries.
      if (meter) meter.steps += ((found < 0 ? name.length : found) - at + 1) * part.length;
      if (found < 0 || found + part.length > end) return false;
      at = found + part.length;
    }
    start = stop + 1;
  }
  return true;
}

/** Line by line: the same line breaks in the same places, and each line matching its glob. */
function linesMatch(pattern: string, name: string, meter: MatchMeter | undefined): boolean {
  const patternLines = pattern.split(lineBreaks);
  const nameLines = name.split(lineBreaks);
  if (patternLines.length !== nameLines.length) return false;
  // Odd indexes hold the line breaks themselves.
  return patternLines.every((line, i) => (i % 2 === 1 ? line === nameLines[i] : globMatch(line, nameLines[i] ?? "", meter)));
}
