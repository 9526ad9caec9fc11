-- The rate limiter's token reservation for the job (ingress's ticket), settled against the job's
-- real usage once it has finished.
ALTER TABLE jobs.jobs ADD COLUMN token_ticket jsonb;
