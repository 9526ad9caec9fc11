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

/*
 * One entry: two doubles (start, duration), then 32-bit words (status, flags, the text's bytes, and
 * the UTF-16 lengths of the id, path, model and error type), then the five strings as one UTF-8
 * text; each entry starts on 8 bytes, so typed-array views read and write the numbers.
 */
const STATUS = 4;
const FLAGS = 5;
const TEXT_BYTES = 6;
const LENGTHS = 7;
const HEADER_BYTES = 48;
const REFS_PER_FACTS = 3;

/**
 * Closed requests' facts, first in first out, held until their batch is made. A record waits up to
 * a second for its batch (BatchPublisher's linger); held as objects and strings, the facts outlived
 * young-generation collections and were copied, then promoted, by them (in the bench, three times
 * the bytes each scavenge kept). Here the strings a request made (its id, path, model and the
 * backend's report) and its numbers are bytes in one buffer outside the JS heap, which no
 * collection copies; what requests share (the key's identity, the route) is held by reference.
 * Writing them is one encoding of one text and a few typed-array stores: cold, after every answer,
 * each call into Node costs.
 */
export class FactsTape {
  private bytes!: Buffer;
  private f64!: Float64Array;
  private u32!: Uint32Array;
  /** Where the oldest facts start, and where the next go (multiples of 8). */
  private head = 0;
  private tail = 0;
  /** Where the newest facts start (for dropNewest). */
  private newest = 0;
  /** Workspace, key and route per facts, in order (long-lived values, so holding them costs nothing). */
  private refs: unknown[] = [];
  private refHead = 0;
  private refTail = 0;

  constructor(initialBytes = 64 * 1024) {
    this.use(Buffer.allocUnsafeSlow(align(Math.max(initialBytes, HEADER_BYTES))));
  }

  /** Facts held. */
  get length(): number {
    return (this.refTail - this.refHead) / REFS_PER_FACTS;
  }

  push(facts: UsageFacts): void {
    const { requestId, path } = facts;
    const model = facts.model ?? "";
    const errorType = facts.errorType ?? "";
    const outcomeText = facts.outcomeText ?? "";
    const text = requestId + path + model + errorType + outcomeText;
    // UTF-8 takes at most three bytes per UTF-16 unit.
    this.reserve(HEADER_BYTES + 3 * text.length + 8);
    const at = this.tail;
    this.newest = at;
    const d = at >>> 3;
    this.f64[d] = facts.startedAtNs;
    this.f64[d + 1] = facts.durationMs;
    const u = at >>> 2;
    const u32 = this.u32;
    u32[u + STATUS] = facts.status;
    u32[u + FLAGS] =
      (facts.stream ? STREAM : 0) |
      (facts.model !== undefined ? MODEL : 0) |
      (facts.errorType !== undefined ? ERROR_TYPE : 0) |
      (facts.outcomeText !== undefined ? OUTCOME : 0);
    u32[u + LENGTHS] = requestId.length;
    u32[u + LENGTHS + 1] = path.length;
    u32[u + LENGTHS + 2] = model.length;
    u32[u + LENGTHS + 3] = errorType.length;
    const written = this.bytes.write(text, at + HEADER_BYTES, "utf8");
    u32[u + TEXT_BYTES] = written;
    this.tail = align(at + HEADER_BYTES + written);
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
    const at = this.head;
    const u = at >>> 2;
    const u32 = this.u32;
    const flags = u32[u + FLAGS] as number;
    const start = at + HEADER_BYTES;
    const bytes = u32[u + TEXT_BYTES] as number;
    // UTF-8 keeps every string's UTF-16 length (a lone surrogate becomes U+FFFD, one unit too), so
    // the lengths cut the decoded text back into its strings.
    const text = this.bytes.toString("utf8", start, start + bytes);
    const idEnd = u32[u + LENGTHS] as number;
    const pathEnd = idEnd + (u32[u + LENGTHS + 1] as number);
    const modelEnd = pathEnd + (u32[u + LENGTHS + 2] as number);
    const errorEnd = modelEnd + (u32[u + LENGTHS + 3] as number);
    const refs = this.refs;
    const r = this.refHead;
    const facts: UsageFacts = {
      requestId: text.slice(0, idEnd),
      startedAtNs: this.f64[at >>> 3] as number,
      durationMs: this.f64[(at >>> 3) + 1] as number,
      workspaceId: refs[r] as string,
      keyId: refs[r + 1] as string,
      path: text.slice(idEnd, pathEnd),
      target: refs[r + 2] as RouteTarget,
      status: u32[u + STATUS] as number,
      stream: (flags & STREAM) !== 0,
      model: flags & MODEL ? text.slice(pathEnd, modelEnd) : undefined,
      errorType: flags & ERROR_TYPE ? text.slice(modelEnd, errorEnd) : undefined,
      outcomeText: flags & OUTCOME ? text.slice(errorEnd) : undefined,
    };
    // Let go of a key's identity once its facts are made (it may be revoked and evicted).
    refs[r] = refs[r + 1] = refs[r + 2] = undefined;
    this.refHead = r + REFS_PER_FACTS;
    this.head = align(start + bytes);
    this.resetIfEmpty();
    return facts;
  }

  private use(bytes: Buffer): void {
    this.bytes = bytes;
    this.f64 = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 3);
    this.u32 = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2);
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
    const old = this.bytes;
    if (old.length < 2 * (held + need)) this.use(Buffer.allocUnsafeSlow(align(Math.max(2 * old.length, 2 * (held + need)))));
    old.copy(this.bytes, 0, this.head, this.tail);
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

/** Rounded up to a multiple of 8. */
function align(n: number): number {
  return (n + 7) & ~7;
}
