import type { IncomingMessage, ServerResponse } from "node:http";
import { Transform, type Readable, type TransformCallback } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate, type Zlib } from "node:zlib";
import getRawBody from "raw-body";
import { GatewayError } from "@gw/errors";
import { acceptBody } from "@gw/service-kit";
import type { BodyBudget } from "./body-budget";

/** Content codings a client may send; the body is forwarded decoded, without the header. */
const decoders: Record<string, () => Transform & Zlib> = {
  gzip: createGunzip,
  "x-gzip": createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/**
 * Reads a request's body into one Buffer, decoded if it came compressed, refusing it once it passes
 * `limit` decoded bytes (so a zip bomb is a 413 after a few chunks). Each body holds its room in the
 * process's budget until its request ends: a plain body of known length reserves that length before
 * a byte is read; a compressed or chunked one reserves as its decoded bytes arrive.
 */
export async function readRequestBody(req: IncomingMessage, res: ServerResponse, limit: number, budget: BodyBudget): Promise<Buffer> {
  const coding = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  const declared = req.headers["content-length"] === undefined ? undefined : Number(req.headers["content-length"]);
  if (coding === "identity" && declared !== undefined && Number.isSafeInteger(declared)) {
    if (declared > limit) throw tooLarge(limit);
    if (!budget.tryReserve(declared)) throw busy();
    res.once("close", () => budget.release(declared));
    acceptBody(req, res);
    return getRawBody(req, { limit, length: declared });
  }
  const decoder = coding === "identity" ? undefined : decoders[coding];
  if (coding !== "identity" && !decoder) {
    throw new GatewayError("unsupported_media_type", `Unsupported content-encoding \`${coding}\`: send the body as is, or as gzip, deflate or br`);
  }
  const meter = new BudgetMeter(budget);
  res.once("close", () => budget.release(meter.reserved));
  const stages: Transform[] = decoder ? [decoder(), meter] : [meter];
  let source: Readable = req;
  for (const stage of stages) {
    const from = source;
    from.pipe(stage);
    from.on("error", (err: Error) => stage.destroy(err));
    source = stage;
  }
  // An aborted request never ends its pipe: the stages must hear of it, or the read waits for ever.
  req.once("aborted", () => stages[0]!.destroy(Object.assign(new Error("request aborted"), { type: "request.aborted", status: 400, expose: true })));
  acceptBody(req, res);
  try {
    return await getRawBody(source, { limit });
  } catch (err) {
    req.unpipe();
    for (const stage of stages) stage.destroy();
    throw isZlibError(err) ? new GatewayError("invalid_request", `Invalid body: it is not valid ${coding} data`, { cause: err }) : err;
  }
}

/** Passes bytes through, taking room in the budget for each chunk first. */
class BudgetMeter extends Transform {
  reserved = 0;

  constructor(private readonly budget: BodyBudget) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (!this.budget.tryReserve(chunk.length)) return callback(busy());
    this.reserved += chunk.length;
    callback(null, chunk);
  }
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError("body_too_large", `Request body is larger than this route accepts (${limit} bytes)`);
}

function busy(): GatewayError {
  return new GatewayError("server_busy", "The gateway is receiving too many large request bodies at once; try again shortly", {
    headers: { "retry-after": "1" },
  });
}

/** zlib's errors carry its own codes (Z_DATA_ERROR…; brotli's ERR__ERROR_FORMAT_…) and a negative errno. */
function isZlibError(err: unknown): boolean {
  const { code, errno } = err as { code?: unknown; errno?: unknown };
  return typeof code === "string" && typeof errno === "number" && (code.startsWith("Z_") || code.startsWith("ERR__"));
}
