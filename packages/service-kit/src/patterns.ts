/**
 * Allow-lists are lists of names with "*" globs. A caller's access is the workspace's list narrowed
 * by the key's: a name is allowed when it matches a pattern of every list.
 */
const compiled = new Map<string, RegExp>();

export function matchesPattern(pattern: string, name: string): boolean {
  if (pattern === "*") return true;
  if (!pattern.includes("*")) return pattern === name;
  let re = compiled.get(pattern);
  if (!re) {
    const source = pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, "\\$&")).join(".*");
    re = new RegExp(`^${source}$`);
    compiled.set(pattern, re);
  }
  return re.test(name);
}

export function allowedByAll(lists: readonly (readonly string[])[], name: string): boolean {
  return lists.every((list) => list.some((pattern) => matchesPattern(pattern, name)));
}
