import type { KeyPrincipal } from "../store/identity-store";

interface Entry {
  principal: KeyPrincipal;
  freshUntil: number;
  /** Past freshness, a known key may still be served while Postgres is unreachable. */
  staleUntil: number;
}

export interface IdentityCacheOptions {
  ttlMs: number;
  negativeTtlMs: number;
  maxStaleMs: number;
  /** Bound of the known keys' store. */
  maxEntries: number;
  /** Bound of the unknown keys' store, kept apart; default a tenth of maxEntries. */
  maxNegativeEntries?: number;
  now?: () => number;
}

/**
 * Key hash → principal, bounded (least recently used goes first) and invalidated by key id or
 * workspace id when an admin change is broadcast. Unknown keys are cached briefly too, so a flood
 * of bad keys does not become a flood of queries; they live in a smaller store of their own, so
 * however many random keys arrive they never push a known key out.
 */
export class IdentityCache {
  private readonly entries = new Map<string, Entry>();
  /** Unknown key hash → end of freshness. */
  private readonly negatives = new Map<string, number>();
  private readonly maxNegatives: number;
  private readonly now: () => number;
  /**
   * Bumped by every invalidation, so a lookup that began before a change can tell that its answer
   * may predate it and must not be cached or trusted.
   */
  private generation = 0;

  constructor(private readonly options: IdentityCacheOptions) {
    this.now = options.now ?? Date.now;
    this.maxNegatives = Math.max(1, options.maxNegativeEntries ?? Math.ceil(options.maxEntries / 10));
  }

  /** A fresh entry, or undefined when the caller must ask the store. */
  getFresh(hash: string): { principal: KeyPrincipal | undefined } | undefined {
    const entry = this.entries.get(hash);
    if (entry && entry.freshUntil > this.now()) {
      // refresh recency
      this.entries.delete(hash);
      this.entries.set(hash, entry);
      return { principal: entry.principal };
    }
    return this.isKnownUnknown(hash) ? { principal: undefined } : undefined;
  }

  /** A known key's fresh principal, or undefined: the hot path, which never looks at unknown keys. */
  getKnown(hash: string): KeyPrincipal | undefined {
    const entry = this.entries.get(hash);
    if (!entry || entry.freshUntil <= this.now()) return undefined;
    this.entries.delete(hash);
    this.entries.set(hash, entry);
    return entry.principal;
  }

  /** True while the store's "no such key" answer for this hash is fresh. */
  isKnownUnknown(hash: string): boolean {
    const until = this.negatives.get(hash);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.negatives.delete(hash);
    return false;
  }

  /** A known key's last principal, used only when the store is unreachable or busy. */
  getStale(hash: string): KeyPrincipal | undefined {
    const entry = this.entries.get(hash);
    return entry && entry.staleUntil > this.now() ? entry.principal : undefined;
  }

  set(hash: string, principal: KeyPrincipal | undefined): void {
    const now = this.now();
    // A key is in one store at most: the store's latest answer wins.
    this.entries.delete(hash);
    this.negatives.delete(hash);
    if (!principal) {
      this.negatives.set(hash, now + this.options.negativeTtlMs);
      evictOldest(this.negatives, this.maxNegatives);
      return;
    }
    this.entries.set(hash, { principal, freshUntil: now + this.options.ttlMs, staleUntil: now + this.options.maxStaleMs });
    evictOldest(this.entries, this.options.maxEntries);
  }

  get epoch(): number {
    return this.generation;
  }

  /** Drops every entry of a key or of a workspace; a linear sweep, as changes are rare. */
  invalidate(kind: "key" | "workspace", id: string): number {
    this.generation++;
    let dropped = 0;
    for (const [hash, entry] of this.entries) {
      const p = entry.principal;
      if (kind === "key" ? p.keyId === id : p.workspace.id === id) {
        this.entries.delete(hash);
        dropped++;
      }
    }
    return dropped;
  }

  /** Unknown-key entries can hide a key created a moment ago by another replica. */
  clearNegative(): void {
    this.negatives.clear();
  }

  /** Known keys held. */
  get size(): number {
    return this.entries.size;
  }

  /** Unknown keys held. */
  get negativeSize(): number {
    return this.negatives.size;
  }
}

function evictOldest(map: Map<string, unknown>, max: number): void {
  while (map.size > max) {
    const oldest = map.keys().next().value;
    if (oldest === undefined) return;
    map.delete(oldest);
  }
}
