import type { RouteTarget } from "../routes";

/** What a record needs from a closed request, read at once so the request can be let go. */
export interface UsageFacts {
  requestId: string;
  /** `process.hrtime.bigint()` at the request's start, in nanoseconds: its wall-clock time is read when the record is made. */
  startedAtNs: number;
  durationMs: number;
  workspaceId: string;
  keyId: string;
  path: string;
  target: RouteTarget;
  status: number;
  stream: boolean;
  model: string | undefined;
  errorType: string | undefined;
  outcomeText: string | undefined;
}

const STREAM = 1;
const MODEL = 2;
const ERROR_TYPE = 4;
const OUTCOME = 8;
/** Two doubles, the status and the flags. */
const FIXED_BYTES = 8 + 8 + 2 + 1;
/** A string's length prefix. */
const PREFIX = 4;
const REFS_PER_FACTS = 3;

/**
 * Closed requests' facts, first in first out, held until their batch is made. A record waits up to
 * a second for its batch (BatchPublisher's linger); held as objects and strings, the facts outlived
 * young-generation collections and were copied, then promoted, by them (in the bench, three times
 * the bytes each scavenge kept). Here the strings a request made (its id, path, model and the
 * backend's report) and its numbers are bytes in one buffer outside the JS heap, which no
 * collection copies; what requests share (the key's identity, the route) is held by reference.
 */
export class FactsTape {
  private bytes: Buffer;
  /** Where the oldest facts start, and where the next go. */
  private head = 0;
  private tail = 0;
  /** Where the newest facts start (for dropNewest). */
  private newest = 0;
  /** Workspace, key and route per facts, in order (long-lived values, so holding them costs nothing). */
  private refs: unknown[] = [];
  private refHead = 0;
  private refTail = 0;

  constructor(initialBytes = 64 * 1024) {
    this.bytes = Buffer.allocUnsafeSlow(initialBytes);
  }

  /** Facts held. */
  get length(): number {
    return (this.refTail - this.refHead) / REFS_PER_FACTS;
  }

  push(facts: UsageFacts): void {
    const { requestId, path, model, errorType, outcomeText } = facts;
    // UTF-8 takes at most three bytes per UTF-16 unit.
    let need = FIXED_BYTES + 2 * PREFIX + 3 * (requestId.length + path.length);
    if (model !== undefined) need += PREFIX + 3 * model.length;
    if (errorType !== undefined) need += PREFIX + 3 * errorType.length;
    if (outcomeText !== undefined) need += PREFIX + 3 * outcomeText.length;
    this.reserve(need);
    const b = this.bytes;
    let at = this.tail;
    this.newest = at;
    b.writeDoubleLE(facts.startedAtNs, at);
    b.writeDoubleLE(facts.durationMs, at + 8);
    b.writeUInt16LE(facts.status, at + 16);
    b[at + 18] =
      (facts.stream ? STREAM : 0) | (model !== undefined ? MODEL : 0) | (errorType !== undefined ? ERROR_TYPE : 0) | (outcomeText !== undefined ? OUTCOME : 0);
    at = this.writeString(requestId, at + FIXED_BYTES);
    at = this.writeString(path, at);
    if (model !== undefined) at = this.writeString(model, at);
    if (errorType !== undefined) at = this.writeString(errorType, at);
    if (outcomeText !== undefined) at = this.writeString(outcomeText, at);
    this.tail = at;
    const refs = this.refs;
    refs[this.refTail] = facts.workspaceId;
    refs[this.refTail + 1] = facts.keyId;
    refs[this.refTail + 2] = facts.target;
    this.refTail += REFS_PER_FACTS;
  }

  /** Takes back the facts pushed last (their record was not queued). */
  dropNewest(): void {
    if (this.refTail === this.refHead) return;
    this.tail = this.newest;
    this.refTail -= REFS_PER_FACTS;
    this.refs.fill(undefined, this.refTail, this.refTail + REFS_PER_FACTS);
    this.resetIfEmpty();
  }

  /** The oldest facts, removed; undefined when none are held. */
  shift(): UsageFacts | undefined {
    if (this.refHead === this.refTail) return undefined;
    const b = this.bytes;
    const at = this.head;
    const flags = b[at + 18] as number;
    this.head = at + FIXED_BYTES;
    const requestId = this.readString();
    const path = this.readString();
    const model = flags & MODEL ? this.readString() : undefined;
    const errorType = flags & ERROR_TYPE ? this.readString() : undefined;
    const outcomeText = flags & OUTCOME ? this.readString() : undefined;
    const refs = this.refs;
    const r = this.refHead;
    const facts: UsageFacts = {
      requestId,
      startedAtNs: b.readDoubleLE(at),
      durationMs: b.readDoubleLE(at + 8),
      workspaceId: refs[r] as string,
      keyId: refs[r + 1] as string,
      path,
      target: refs[r + 2] as RouteTarget,
      status: b.readUInt16LE(at + 16),
      stream: (flags & STREAM) !== 0,
      model,
      errorType,
      outcomeText,
    };
    // Let go of a key's identity once its facts are made (it may be revoked and evicted).
    refs[r] = refs[r + 1] = refs[r + 2] = undefined;
    this.refHead = r + REFS_PER_FACTS;
    this.resetIfEmpty();
    return facts;
  }

  private writeString(value: string, at: number): number {
    const written = this.bytes.write(value, at + PREFIX, "utf8");
    this.bytes.writeUInt32LE(written, at);
    return at + PREFIX + written;
  }

  private readString(): string {
    const length = this.bytes.readUInt32LE(this.head);
    const start = this.head + PREFIX;
    this.head = start + length;
    return this.bytes.toString("utf8", start, start + length);
  }

  private resetIfEmpty(): void {
    if (this.refHead !== this.refTail) return;
    this.head = this.tail = this.newest = 0;
    this.refHead = this.refTail = 0;
  }

  /** Room for `need` more bytes at the tail: the held bytes moved to the front, in a larger buffer if they must be. */
  private reserve(need: number): void {
    if (this.tail + need <= this.bytes.length) return;
    const held = this.tail - this.head;
    const target = this.bytes.length >= 2 * (held + need) ? this.bytes : Buffer.allocUnsafeSlow(Math.max(2 * this.bytes.length, 2 * (held + need)));
    this.bytes.copy(target, 0, this.head, this.tail);
    this.bytes = target;
    this.newest -= this.head;
    this.tail = held;
    this.head = 0;
    // The references move to the front too, so their array stays as long as what is held.
    const refs = this.refs;
    const live = this.refTail - this.refHead;
    if (this.refHead > 0) {
      refs.copyWithin(0, this.refHead, this.refTail);
      refs.fill(undefined, live, this.refTail);
      this.refHead = 0;
      this.refTail = live;
    }
  }
}
