-- Detailed logs: how many days to keep a job's bodies (its request and its result), when its
-- workspace keeps them; NULL: not kept. Jobs publishes them once the job has finished.
ALTER TABLE jobs.jobs ADD COLUMN capture_days int;
