import { randomBytes } from "node:crypto";
import type { FileObject } from "@gw/contracts";
import type { Db, Queryable } from "@gw/db";

/** A file's row, less its content. */
export interface FileRow {
  id: string;
  workspace_id: string;
  purpose: FileObject["purpose"];
  filename: string;
  bytes: string | number;
  created_at: Date;
  expires_at: Date | null;
}

export interface NewFile {
  workspaceId: string;
  purpose: FileObject["purpose"];
  filename: string;
  content: Buffer;
  expiresInSeconds: number;
}

export interface FileListQuery {
  workspaceId: string;
  purpose?: string;
  limit: number;
  order: "asc" | "desc";
  after?: string;
}

const COLUMNS = "id, workspace_id, purpose, filename, bytes, created_at, expires_at";
/** A file past its expiry is gone for its workspace at once, whether or not the sweep has removed it yet. */
const LIVE = "(expires_at IS NULL OR expires_at > now())";

/** OpenAI's file ids: `file-` and 24 letters and digits. */
export function newFileId(): string {
  return `file-${randomBytes(18).toString("base64url").replace(/[-_]/g, "x")}`;
}

export function fileObject(row: FileRow): FileObject {
  return {
    id: row.id,
    object: "file",
    bytes: Number(row.bytes),
    created_at: Math.floor(row.created_at.getTime() / 1000),
    ...(row.expires_at ? { expires_at: Math.floor(row.expires_at.getTime() / 1000) } : {}),
    filename: row.filename,
    purpose: row.purpose,
    status: "processed",
  };
}

/** `jobs.files`: a workspace's uploads and its batches' output files. Another workspace's file does not exist. */
export class FileStore {
  constructor(private readonly db: Db) {}

  /** An upload: the row and its content, one part. */
  async create(file: NewFile): Promise<FileRow> {
    return this.db.transaction(async (tx: Queryable) => {
      const result = await tx.query<FileRow>(
        `INSERT INTO jobs.files (id, workspace_id, purpose, filename, bytes, expires_at)
         VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 second') RETURNING ${COLUMNS}`,
        [newFileId(), file.workspaceId, file.purpose, file.filename, file.content.length, file.expiresInSeconds],
      );
      const row = result.rows[0]!;
      await tx.query("INSERT INTO jobs.file_parts (file_id, part, content) VALUES ($1, 0, $2)", [row.id, file.content]);
      return row;
    });
  }

  async read(id: string, workspaceId: string): Promise<FileRow | undefined> {
    const result = await this.db.query<FileRow>(`SELECT ${COLUMNS} FROM jobs.files WHERE id = $1 AND workspace_id = $2 AND ${LIVE}`, [id, workspaceId]);
    return result.rows[0];
  }

  /** A page of the workspace's files, newest first by default; `after` is the last id of the previous page. */
  async list(query: FileListQuery): Promise<{ rows: FileRow[]; hasMore: boolean }> {
    const params: unknown[] = [query.workspaceId, query.limit + 1];
    const where = [`workspace_id = $1`, LIVE];
    if (query.purpose !== undefined) {
      params.push(query.purpose);
      where.push(`purpose = $${params.length}`);
    }
    const direction = query.order === "asc" ? "ASC" : "DESC";
    if (query.after !== undefined) {
      params.push(query.after);
      const at = `$${params.length}`;
      where.push(`(created_at, id) ${query.order === "asc" ? ">" : "<"} (SELECT created_at, id FROM jobs.files WHERE id = ${at} AND workspace_id = $1)`);
    }
    const result = await this.db.query<FileRow>(
      `SELECT ${COLUMNS} FROM jobs.files WHERE ${where.join(" AND ")} ORDER BY created_at ${direction}, id ${direction} LIMIT $2`,
      params,
    );
    return { rows: result.rows.slice(0, query.limit), hasMore: result.rows.length > query.limit };
  }

  async remove(id: string, workspaceId: string): Promise<boolean> {
    const result = await this.db.query(`DELETE FROM jobs.files WHERE id = $1 AND workspace_id = $2 AND ${LIVE}`, [id, workspaceId]);
    return result.rowCount > 0;
  }

  /** The sizes of a file's parts, in order; empty once the file is gone. */
  async parts(id: string): Promise<{ part: number; bytes: number }[]> {
    const result = await this.db.query<{ part: number; bytes: string | number }>(
      "SELECT part, length(content) AS bytes FROM jobs.file_parts WHERE file_id = $1 ORDER BY part",
      [id],
    );
    return result.rows.map((row) => ({ part: row.part, bytes: Number(row.bytes) }));
  }

  /** A slice of one part of a file (`from` counts from 0); undefined once the file is gone. */
  async slice(id: string, part: number, from: number, length: number): Promise<Buffer | undefined> {
    const result = await this.db.query<{ piece: Buffer }>(
      "SELECT substring(content FROM $3 FOR $4) AS piece FROM jobs.file_parts WHERE file_id = $1 AND part = $2",
      [id, part, from + 1, length],
    );
    return result.rows[0]?.piece;
  }

  /** The whole content, for validating a batch's input (an upload: at most the upload limit). */
  async content(id: string, workspaceId: string): Promise<Buffer | undefined> {
    const result = await this.db.query<{ content: Buffer }>(
      `SELECT p.content FROM jobs.files f JOIN jobs.file_parts p ON p.file_id = f.id
       WHERE f.id = $1 AND f.workspace_id = $2 AND ${LIVE} ORDER BY p.part`,
      [id, workspaceId],
    );
    if (result.rows.length === 0) return (await this.read(id, workspaceId)) ? Buffer.alloc(0) : undefined;
    return Buffer.concat(result.rows.map((row) => row.content));
  }

  /** Removes expired files; returns how many went. */
  async removeExpired(limit: number): Promise<number> {
    const result = await this.db.query(
      `DELETE FROM jobs.files WHERE id IN (SELECT id FROM jobs.files WHERE expires_at <= now() ORDER BY expires_at LIMIT $1)`,
      [limit],
    );
    return result.rowCount;
  }
}
