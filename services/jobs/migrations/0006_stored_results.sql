-- Results too large for a bus message (a long speech file, a big transcription): the worker hands
-- them to the jobs service over HTTP, per attempt, and the job's poll streams them from here.
-- EXTERNAL storage (out of line, uncompressed) lets the poll read them a slice at a time.
CREATE TABLE jobs.results (
  job_id text NOT NULL REFERENCES jobs.jobs (id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  body bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, attempt)
);
ALTER TABLE jobs.results ALTER COLUMN body SET STORAGE EXTERNAL;

-- Set when a finished job's result is in jobs.results (its size in bytes); `result` is then NULL.
ALTER TABLE jobs.jobs ADD COLUMN result_bytes integer;
