-- Detailed logs (Enterprise): a request's captured bodies, apart from its usage record. Partitioned
-- by the UTC day the bodies expire (the day of started_at plus the workspace's retention_days), so
-- retention drops whole partitions whatever each workspace's retention is: never a per-row DELETE.
-- Partitions `bodies_YYYYMMDD` are made on demand by the service.
CREATE TABLE usage.bodies (
  request_id   text NOT NULL,
  expires_on   date NOT NULL,
  started_at   timestamptz NOT NULL,
  workspace_id text NOT NULL,
  key_id       text NOT NULL,
  request      jsonb NOT NULL,
  response     jsonb,
  PRIMARY KEY (request_id, expires_on)
) PARTITION BY RANGE (expires_on);

CREATE INDEX bodies_request_idx ON usage.bodies (request_id);
