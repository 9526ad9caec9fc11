-- Async jobs as the jobs service runs them (issue 6): the identity the work runs under, dispatch
-- bookkeeping for the outbox sweep and deadline retries, the upstream's own task id (research),
-- and idempotency keys.
ALTER TABLE jobs.jobs
  ADD COLUMN identity        jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Sealed (AES-256-GCM under the internal secret) provider credentials of an enterprise workspace.
  ADD COLUMN credentials     text,
  ADD COLUMN request_id      text,
  -- Null until the work message is on the bus; the sweep publishes rows left null (the outbox).
  ADD COLUMN dispatched_at   timestamptz,
  -- When the current attempt is given up on and retried (or the job failed, after the last one).
  ADD COLUMN deadline_at     timestamptz,
  ADD COLUMN upstream_id     text,
  -- When the status was reported (the event's own clock, ms), so a late running status never replaces a newer one.
  ADD COLUMN status_at       bigint,
  ADD COLUMN idempotency_key text,
  ADD COLUMN request_hash    text;

-- Idempotency keys are per API key and route; a key older than a day is released by the service.
CREATE UNIQUE INDEX jobs_idempotency_idx ON jobs.jobs (key_id, route, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- The sweep's two questions: which unfinished jobs are undispatched or past their deadline.
CREATE INDEX jobs_open_idx ON jobs.jobs (deadline_at) WHERE status NOT IN ('completed', 'failed');
-- Retention removes finished jobs by age.
CREATE INDEX jobs_finished_idx ON jobs.jobs (completed_at) WHERE completed_at IS NOT NULL;
