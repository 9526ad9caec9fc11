import type { KeyPrincipal } from "../store/identity-store";

interface Entry {
  principal: KeyPrincipal | undefined;
  freshUntil: number;
  /** Past freshness, a known key may still be served while Postgres is unreachable. */
  staleUntil: number;
}

export interface IdentityCacheOptions {
  ttlMs: number;
  negativeTtlMs: number;
  maxStaleMs: number;
  maxEntries: number;
  now?: () => number;
}

/**
 * Key hash → principal, bounded (least recently used goes first) and invalidated by key id or
 * workspace id when an admin change is broadcast. Unknown keys are cached briefly too, so a flood
 * of bad keys does not become a flood of queries.
 */
export class IdentityCache {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;
  /**
   * Bumped by every invalidation, so a lookup that began before a change can tell that its answer
   * may predate it and must not be cached or trusted.
   */
  private generation = 0;

  constructor(private readonly options: IdentityCacheOptions) {
    this.now = options.now ?? Date.now;
  }

  /** A fresh entry, or undefined when the caller must ask the store. */
  getFresh(hash: string): { principal: KeyPrincipal | undefined } | undefined {
    const entry = this.entries.get(hash);
    if (!entry || entry.freshUntil <= this.now()) return undefined;
    // refresh recency
    this.entries.delete(hash);
    this.entries.set(hash, entry);
    return { principal: entry.principal };
  }

  /** A known key's last principal, used only when the store is unreachable. */
  getStale(hash: string): KeyPrincipal | undefined {
    const entry = this.entries.get(hash);
    return entry && entry.principal && entry.staleUntil > this.now() ? entry.principal : undefined;
  }

  set(hash: string, principal: KeyPrincipal | undefined): void {
    const now = this.now();
    const ttl = principal ? this.options.ttlMs : this.options.negativeTtlMs;
    this.entries.delete(hash);
    this.entries.set(hash, { principal, freshUntil: now + ttl, staleUntil: now + this.options.maxStaleMs });
    if (this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
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
      if (p && (kind === "key" ? p.keyId === id : p.workspace.id === id)) {
        this.entries.delete(hash);
        dropped++;
      }
    }
    return dropped;
  }

  /** Unknown-key entries can hide a key created a moment ago by another replica. */
  clearNegative(): void {
    for (const [hash, entry] of this.entries) if (!entry.principal) this.entries.delete(hash);
  }

  get size(): number {
    return this.entries.size;
  }
}
