-- Async jobs and research jobs (ARCHITECTURE.md "State"). Rows are written before their work is
-- published, so a job can never be running without a record of it.
CREATE TABLE jobs.jobs (
  id           text PRIMARY KEY,
  workspace_id text NOT NULL,
  key_id       text NOT NULL,
  route        text NOT NULL,
  request      jsonb NOT NULL,
  status       text NOT NULL DEFAULT 'queued',
  result       jsonb,
  error        jsonb,
  attempts     integer NOT NULL DEFAULT 0,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);

CREATE INDEX jobs_workspace_idx ON jobs.jobs (workspace_id, created_at DESC);
CREATE INDEX jobs_status_idx ON jobs.jobs (status, updated_at);
