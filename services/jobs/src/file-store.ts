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

/** PGlite answers bytea as a Uint8Array, node-postgres as a Buffer. */
const asBuffer = (bytes: Uint8Array): Buffer => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

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

  async create(file: NewFile, tx: Queryable = this.db): Promise<FileRow> {
    const result = await tx.query<FileRow>(
      `INSERT INTO jobs.files (id, workspace_id, purpose, filename, bytes, content, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 second') RETURNING ${COLUMNS}`,
      [newFileId(), file.workspaceId, file.purpose, file.filename, file.content.length, file.content, file.expiresInSeconds],
    );
    return result.rows[0]!;
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

  /** A slice of a file's content (`from` counts from 0); undefined once the file is gone. */
  async slice(id: string, from: number, length: number): Promise<Buffer | undefined> {
    const result = await this.db.query<{ part: Buffer }>("SELECT substring(content FROM $2 FOR $3) AS part FROM jobs.files WHERE id = $1", [
      id,
      from + 1,
      length,
    ]);
    const part = result.rows[0]?.part;
    return part && asBuffer(part);
  }

  /** The whole content, for validating a batch's input (at most the upload limit). */
  async content(id: string, workspaceId: string): Promise<Buffer | undefined> {
    const result = await this.db.query<{ content: Buffer }>(`SELECT content FROM jobs.files WHERE id = $1 AND workspace_id = $2 AND ${LIVE}`, [
      id,
      workspaceId,
    ]);
    const content = result.rows[0]?.content;
    return content && asBuffer(content);
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
