-- Hostile text and workspace credentials (issue 20).
--
-- A job's request, result and error are kept as the JSON text JSON.stringify wrote. jsonb refuses
-- \u0000 and lone surrogates ("unsupported Unicode escape sequence", "invalid input syntax for type
-- json"), which callers and upstreams may send; JSON.stringify writes both as ASCII escapes, which
-- text keeps as they are and JSON.parse turns back into the same characters. Rows already here keep
-- their JSON, now as jsonb's own text rendering of it.
ALTER TABLE jobs.jobs
  ALTER COLUMN request TYPE text USING request::text,
  ALTER COLUMN result TYPE text USING result::text,
  ALTER COLUMN error TYPE text USING error::text;

-- The column 0002 added held the `x-gw-credentials` header sealed under the internal secret, for the
-- job's whole retention. Renamed: emptied here for finished jobs, and sealed at rest by the service
-- at start for unfinished ones (when it has GATEWAY_MASTER_KEY).
ALTER TABLE jobs.jobs RENAME COLUMN credentials TO transit_credentials;
UPDATE jobs.jobs SET transit_credentials = NULL WHERE status IN ('completed', 'failed') AND transit_credentials IS NOT NULL;

-- An enterprise workspace's own provider credentials, kept only while the job can run and set to
-- NULL by the statement that finishes it: by provider, sealed at rest under GATEWAY_MASTER_KEY as
-- ingress stores them, with the version of the change that set them:
-- {"<provider>": {"sealed": "v1.…", "version": 0}}. A removal leaves {"version": n}, so that an
-- older change arriving late cannot bring the credential back.
ALTER TABLE jobs.jobs ADD COLUMN credentials jsonb;
