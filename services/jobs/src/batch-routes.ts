import express, { type Express, type Request, type Response } from "express";
import { z } from "zod";
import { BATCH_ID, CreateBatchRequest, DEFAULT_FILE_EXPIRY_SECONDS, ExpiresAfter, FILE_ID, filePurposes, type Identity, uploadPurposes } from "@gw/contracts";
import { fromZodError, GatewayError } from "@gw/errors";
import { jsonBody, readFormEntries, routeLabel, writeOrWait, type UploadGate } from "@gw/service-kit";
import { batchObject, type BatchRow, type BatchStore } from "./batch-store";
import { fileObject, type FileStore } from "./file-store";
import { gateLargeBodies } from "./upload-gate";

export interface BatchRoutesDeps {
  files: FileStore;
  batches: BatchStore;
  /** The largest upload (OpenAI's 200 MB, or the operator's body limit if lower). */
  fileLimitBytes: number;
  /** Tells the runner a batch has work now (created or cancelled). */
  kick(): void;
  /** Large bodies stored at once, shared with the async routes. */
  uploads: UploadGate;
}

/** A file goes out in slices of this size, so a download never holds all of it. */
const SLICE_BYTES = 1024 * 1024;

const FileListQuery = z.object({
  purpose: z.enum(filePurposes).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(10_000),
  order: z.enum(["asc", "desc"]).default("desc"),
  after: z.string().regex(FILE_ID, "must be a file id").optional(),
});

const BatchListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after: z.string().regex(BATCH_ID, "must be a batch id").optional(),
});

const identityOf = (res: Response) => res.locals.identity as Identity;

/**
 * OpenAI's Files API (`/v1/files`, for batch input and the batches' output) and Batch API
 * (`/v1/batches`), for the caller's workspace: another workspace's file or batch is a 404.
 */
export function mountBatchRoutes(app: Express, deps: BatchRoutesDeps): void {
  const { files, batches } = deps;

  app.post(
    "/v1/files",
    routeLabel("/v1/files"),
    gateLargeBodies(deps.uploads),
    express.raw({ limit: deps.fileLimitBytes, type: () => true }),
    async (req, res) => {
      const upload = await readUpload(req);
      const row = await files.create({ workspaceId: identityOf(res).workspace_id, ...upload });
      res.json(fileObject(row));
    },
  );

  app.get("/v1/files", routeLabel("/v1/files"), async (req, res) => {
    const query = parseQuery(FileListQuery, req);
    const page = await files.list({ workspaceId: identityOf(res).workspace_id, ...query });
    res.json(listOf(page.rows.map(fileObject), page.hasMore));
  });

  app.get("/v1/files/:fileId", routeLabel("/v1/files/{file_id}"), async (req, res) => {
    const row = await files.read(String(req.params.fileId), identityOf(res).workspace_id);
    if (!row) throw noSuchFile(req);
    res.json(fileObject(row));
  });

  app.delete("/v1/files/:fileId", routeLabel("/v1/files/{file_id}"), async (req, res) => {
    const id = String(req.params.fileId);
    if (!(await files.remove(id, identityOf(res).workspace_id))) throw noSuchFile(req);
    res.json({ id, object: "file", deleted: true });
  });

  app.get("/v1/files/:fileId/content", routeLabel("/v1/files/{file_id}/content"), async (req, res) => {
    const row = await files.read(String(req.params.fileId), identityOf(res).workspace_id);
    if (!row) throw noSuchFile(req);
    const parts = await files.parts(row.id);
    res.status(200);
    // express's attachment() writes a name outside Latin-1 as RFC 5987's filename*, with a plain fallback.
    res.attachment(row.filename);
    res.type("application/octet-stream");
    res.setHeader("content-length", String(parts.reduce((sum, p) => sum + p.bytes, 0)));
    for (const { part, bytes } of parts) {
      for (let from = 0; from < bytes && !res.destroyed; from += SLICE_BYTES) {
        const piece = await files.slice(row.id, part, from, Math.min(SLICE_BYTES, bytes - from));
        // Deleted while it was being read: the answer stops short, which the client sees as an error.
        if (!piece) return void res.destroy();
        await writeOrWait(res, piece);
      }
    }
    res.end();
  });

  app.post("/v1/batches", routeLabel("/v1/batches"), jsonBody("1mb"), async (req, res) => {
    const parsed = CreateBatchRequest.safeParse(req.body);
    if (!parsed.success) throw fromZodError(parsed.error);
    const identity = identityOf(res);
    const input = await files.read(parsed.data.input_file_id, identity.workspace_id);
    if (!input) throw new GatewayError("not_found", `No such File object: ${parsed.data.input_file_id}`, { param: "input_file_id" });
    if (input.purpose !== "batch") {
      throw new GatewayError("invalid_request", `The file ${input.id} has purpose ${input.purpose}; a batch's input must be uploaded with purpose \`batch\``, {
        param: "input_file_id",
      });
    }
    const batch = await batches.create({
      identity,
      endpoint: parsed.data.endpoint,
      inputFileId: input.id,
      completionWindow: parsed.data.completion_window,
      metadata: parsed.data.metadata,
      outputExpiresAfter: parsed.data.output_expires_after?.seconds,
      requestId: res.locals.requestId as string | undefined,
    });
    deps.kick();
    res.json(batchObject(batch));
  });

  app.get("/v1/batches", routeLabel("/v1/batches"), async (req, res) => {
    const query = parseQuery(BatchListQuery, req);
    const page = await batches.list(identityOf(res).workspace_id, query.limit, query.after);
    res.json(
      listOf(
        page.rows.map((row) => batchObject(row)),
        page.hasMore,
      ),
    );
  });

  app.get("/v1/batches/:batchId", routeLabel("/v1/batches/{batch_id}"), async (req, res) => {
    const row = await batches.read(String(req.params.batchId), identityOf(res).workspace_id);
    if (!row) throw noSuchBatch(req);
    res.json(batchObject(row, await liveCounts(batches, row)));
  });

  app.post("/v1/batches/:batchId/cancel", routeLabel("/v1/batches/{batch_id}/cancel"), async (req, res) => {
    const outcome = await batches.cancel(String(req.params.batchId), identityOf(res).workspace_id);
    if (outcome.kind === "missing") throw noSuchBatch(req);
    if (outcome.kind === "finished") throw new GatewayError("conflict", `Cannot cancel a batch with status ${outcome.batch.status}`);
    deps.kick();
    const { batch } = outcome;
    res.json(batchObject(batch, await liveCounts(batches, batch)));
  });
}

/**
 * The form of `POST /v1/files`: a `file`, `purpose` batch (the only files this gateway keeps for
 * callers) and OpenAI's optional `expires_after[anchor]` and `expires_after[seconds]`.
 */
async function readUpload(req: Request): Promise<{ purpose: "batch"; filename: string; content: Buffer; expiresInSeconds: number }> {
  const entries = await readFormEntries(req.get("content-type"), req.body, "`file` and `purpose` fields");
  const field = (name: string) => entries.find(([key]) => key === name)?.[1];
  const purpose = field("purpose");
  if (purpose === undefined) throw new GatewayError("invalid_request", "Missing required parameter: 'purpose'", { param: "purpose" });
  if (typeof purpose !== "string" || !(uploadPurposes as readonly string[]).includes(purpose)) {
    throw new GatewayError("invalid_request", "Invalid purpose: this gateway keeps files for the Batch API only; purpose must be `batch`", {
      param: "purpose",
    });
  }
  const file = field("file");
  if (file === undefined || typeof file === "string") {
    throw new GatewayError("invalid_request", "Missing required parameter: 'file' (a file part of the form)", { param: "file" });
  }
  if (!file.name.toLowerCase().endsWith(".jsonl")) {
    throw new GatewayError("invalid_request", "Invalid file format for Batch API. Must be .jsonl", { param: "file" });
  }
  const anchor = field("expires_after[anchor]");
  const seconds = field("expires_after[seconds]");
  let expiresInSeconds = DEFAULT_FILE_EXPIRY_SECONDS;
  if (anchor !== undefined || seconds !== undefined) {
    const parsed = ExpiresAfter.safeParse({ anchor, seconds });
    if (!parsed.success) throw fromZodError(parsed.error, "expires_after");
    expiresInSeconds = parsed.data.seconds;
  }
  // The name as given, less control characters (a text column refuses U+0000; headers refuse the rest).
  const filename =
    [...file.name]
      .filter((ch) => ch.charCodeAt(0) > 0x1f && ch !== "\u007f")
      .join("")
      .slice(0, 255) || "file.jsonl";
  return { purpose: "batch", filename, content: Buffer.from(await file.arrayBuffer()), expiresInSeconds };
}

/** A running batch's counts so far; a finished one keeps its own. */
async function liveCounts(batches: BatchStore, row: BatchRow): Promise<{ completed: number; failed: number } | undefined> {
  return row.request_counts ? undefined : (await batches.counts([row.id])).get(row.id);
}

function parseQuery<T extends z.ZodType>(schema: T, req: Request): z.infer<T> {
  const parsed = schema.safeParse(req.query);
  if (!parsed.success) throw fromZodError(parsed.error, "query");
  return parsed.data;
}

function listOf<T extends { id: string }>(data: T[], hasMore: boolean) {
  return { object: "list" as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}

function noSuchFile(req: Request): GatewayError {
  return new GatewayError("not_found", `No such File object: ${String(req.params.fileId)}`, { param: "file_id" });
}

function noSuchBatch(req: Request): GatewayError {
  return new GatewayError("not_found", `No batch found with id '${String(req.params.batchId)}'`, { param: "batch_id" });
}
