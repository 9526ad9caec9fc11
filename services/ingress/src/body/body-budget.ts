/**
 * Bounds the request bodies one ingress process holds in memory at once. A body reserves its size
 * before it is read (its declared length, or the route's limit when the length is unknown or the body
 * is compressed) and gives it back when its request ends, so a burst of large uploads is refused with
 * a retryable 503 instead of growing the heap until the process is killed.
 */
export class BodyBudget {
  private held = 0;

  constructor(readonly capacityBytes: number) {}

  /** Takes `bytes` if they fit; a body larger than the whole budget never fits. */
  tryReserve(bytes: number): boolean {
    if (this.held + bytes > this.capacityBytes) return false;
    this.held += bytes;
    return true;
  }

  release(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
  }

  get heldBytes(): number {
    return this.held;
  }
}
