/** `defaults` with every option the caller set; an option set to undefined keeps its default. */
export function withDefaults<T extends object>(defaults: T, options: Partial<T>): T {
  const set = Object.entries(options).filter(([, value]) => value !== undefined);
  return { ...defaults, ...Object.fromEntries(set) };
}
