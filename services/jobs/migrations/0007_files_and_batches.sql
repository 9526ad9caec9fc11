-- OpenAI's Files and Batch APIs (issue 25).
--
-- A file is its workspace's: uploaded JSONL of batch requests (purpose `batch`), or a batch's
-- output or error file (`batch_output`). Its content is in parts, in order: an upload is one part
-- (at most 200 MB), a batch's output a part per thousand lines, so that no value comes near
-- Postgres's 1 GB bound however large a batch's answers are. EXTERNAL storage (out of line,
-- uncompressed) lets `GET /v1/files/{id}/content` read a part a slice at a time.
CREATE TABLE jobs.files (
  id           text PRIMARY KEY,
  workspace_id text NOT NULL,
  purpose      text NOT NULL,
  filename     text NOT NULL,
  bytes        bigint NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz
);
CREATE TABLE jobs.file_parts (
  file_id text NOT NULL REFERENCES jobs.files (id) ON DELETE CASCADE,
  part    integer NOT NULL,
  content bytea NOT NULL,
  PRIMARY KEY (file_id, part)
);
ALTER TABLE jobs.file_parts ALTER COLUMN content SET STORAGE EXTERNAL;
CREATE INDEX files_workspace_idx ON jobs.files (workspace_id, created_at DESC, id DESC);
CREATE INDEX files_expiry_idx ON jobs.files (expires_at) WHERE expires_at IS NOT NULL;

-- A batch: its input file's lines are admitted (by ingress's limits and budgets) in order, from
-- `next_line`, each becoming a job of `jobs.jobs` with `batch_id` and `batch_line`. Whichever jobs
-- replica holds the lease (`lease_until`, `lease_token`) moves it on, and every change it makes
-- names its token, so a replica whose lease lapsed changes nothing; `wake_at` is when its limits
-- have room again.
CREATE TABLE jobs.batches (
  id                   text PRIMARY KEY,
  workspace_id         text NOT NULL,
  key_id               text NOT NULL,
  identity             jsonb NOT NULL,
  endpoint             text NOT NULL,
  input_file_id        text NOT NULL,
  completion_window    text NOT NULL,
  metadata             jsonb,
  output_expires_after integer,
  status               text NOT NULL DEFAULT 'validating',
  errors               jsonb,
  total                integer NOT NULL DEFAULT 0,
  next_line            integer NOT NULL DEFAULT 0,
  output_file_id       text,
  error_file_id        text,
  request_counts       jsonb,
  usage                jsonb,
  request_id           text,
  wake_at              timestamptz,
  lease_until          timestamptz,
  lease_token          text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  in_progress_at       timestamptz,
  expires_at           timestamptz NOT NULL,
  finalizing_at        timestamptz,
  completed_at         timestamptz,
  failed_at            timestamptz,
  expired_at           timestamptz,
  cancelling_at        timestamptz,
  cancelled_at         timestamptz
);
CREATE INDEX batches_workspace_idx ON jobs.batches (workspace_id, created_at DESC, id DESC);
-- The runner's question: which batches have work to do now.
CREATE INDEX batches_open_idx ON jobs.batches (wake_at) WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');

-- The input's lines, as validation read them: admitted in order, removed when the batch is finalized.
CREATE TABLE jobs.batch_lines (
  batch_id  text NOT NULL REFERENCES jobs.batches (id) ON DELETE CASCADE,
  line      integer NOT NULL,
  custom_id text NOT NULL,
  body      text NOT NULL,
  PRIMARY KEY (batch_id, line)
);

-- A batch's line as a job, with the HTTP status of its answer for the output file. Retention removes
-- it only once its batch has finished (a redelivered event still finds it for the usage ledger and
-- the settlements, as any job's).
ALTER TABLE jobs.jobs
  ADD COLUMN batch_id   text,
  ADD COLUMN batch_line integer,
  ADD COLUMN custom_id  text,
  ADD COLUMN status_code integer;
CREATE UNIQUE INDEX jobs_batch_line_idx ON jobs.jobs (batch_id, batch_line) WHERE batch_id IS NOT NULL;
-- The runner's question every step: how many of a batch's lines are still running.
CREATE INDEX jobs_batch_open_idx ON jobs.jobs (batch_id) WHERE batch_id IS NOT NULL AND status NOT IN ('completed', 'failed');

-- A part of a line's result or error (JSON text), or NULL when Postgres cannot read it (a lone
-- surrogate escape, which JSON.stringify writes and Postgres refuses): a batch's summary must never
-- stop on one line.
CREATE FUNCTION jobs.json_part(doc text, VARIADIC path text[]) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RETURN doc::jsonb #> path;
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;
