-- The usage ledger (docs/usage-ledger.md). Unqualified names land in the "usage" schema.

-- One row per request, as published on usage.records. Partitioned by day (UTC) on started_at: the
-- service creates each day's partition ahead (records_YYYYMMDD), and retention drops whole
-- partitions instead of deleting rows. The key lives inside a partition, so it holds started_at:
-- a redelivered record is the same message with the same started_at, and ON CONFLICT skips it.
CREATE TABLE records (
  request_id          text NOT NULL,
  started_at          timestamptz NOT NULL,
  workspace_id        text NOT NULL,
  key_id              text NOT NULL,
  route               text NOT NULL,
  model               text,
  provider            text,
  upstream_model      text,
  attempts            integer,
  status              smallint NOT NULL,
  error_type          text,
  stream              boolean NOT NULL,
  job_id              text,
  duration_ms         double precision NOT NULL,
  ttft_ms             double precision,
  upstream_ms         double precision,
  input_tokens        bigint,
  output_tokens       bigint,
  cached_input_tokens bigint,
  cache_write_tokens  bigint,
  reasoning_tokens    bigint,
  units               jsonb,
  cost_usd            numeric,
  price_version       text,
  PRIMARY KEY (request_id, started_at)
) PARTITION BY RANGE (started_at);

-- A workspace's logs, newest first, and the cursor that pages them; and the operator's, across all
-- workspaces (an index on the time costs ingest little: its inserts all land at one end).
CREATE INDEX records_workspace_idx ON records (workspace_id, started_at DESC, request_id DESC);
CREATE INDEX records_started_idx ON records (started_at DESC, request_id DESC);

-- Hourly roll-ups, written in the same transaction as the records they count (only those the insert
-- actually inserted). '' stands for "none" in the key columns, which a primary key cannot hold as
-- null. latency is a fixed log-bucket histogram of duration_ms (src/histogram.ts), so percentiles of
-- any group of rows come from summing their histograms. Rows are updated many times an hour: pages
-- kept half empty let each update stay on its page (HOT), writing no new index entries; that made
-- the ingest transaction's roll-up upsert three times faster (docs/usage-ledger.md).
CREATE TABLE hourly (
  workspace_id        text NOT NULL,
  hour                timestamptz NOT NULL,
  key_id              text NOT NULL,
  model               text NOT NULL,
  provider            text NOT NULL,
  route               text NOT NULL,
  status              smallint NOT NULL,
  price_version       text NOT NULL,
  requests            bigint NOT NULL,
  errors              bigint NOT NULL,
  input_tokens        bigint NOT NULL,
  output_tokens       bigint NOT NULL,
  cached_input_tokens bigint NOT NULL,
  cache_write_tokens  bigint NOT NULL,
  reasoning_tokens    bigint NOT NULL,
  -- Records without a price (cost_usd null); cost_usd is null while none of the row's was priced.
  unpriced            bigint NOT NULL,
  cost_usd            numeric,
  latency             integer[] NOT NULL,
  PRIMARY KEY (workspace_id, hour, key_id, model, provider, route, status, price_version)
) WITH (fillfactor = 50);
CREATE INDEX hourly_hour_idx ON hourly (hour);

-- The same sums by workspace, hour and model only: the roll-up a dashboard's "per day, per model"
-- reads. A busy workspace has a few hundred rows an hour in "hourly" (keys × models × routes ×
-- statuses), too many to sum a month of histograms within 200 ms; here it has one per model.
CREATE TABLE hourly_models (
  workspace_id        text NOT NULL,
  hour                timestamptz NOT NULL,
  model               text NOT NULL,
  requests            bigint NOT NULL,
  errors              bigint NOT NULL,
  input_tokens        bigint NOT NULL,
  output_tokens       bigint NOT NULL,
  cached_input_tokens bigint NOT NULL,
  cache_write_tokens  bigint NOT NULL,
  reasoning_tokens    bigint NOT NULL,
  unpriced            bigint NOT NULL,
  cost_usd            numeric,
  latency             integer[] NOT NULL,
  PRIMARY KEY (workspace_id, hour, model)
) WITH (fillfactor = 50);
CREATE INDEX hourly_models_hour_idx ON hourly_models (hour);

-- What the priced records of an hour were billed for, line by line: the statement's source. The unit
-- price is part of the key because one price version can price an item differently by provider.
CREATE TABLE hourly_lines (
  workspace_id   text NOT NULL,
  hour           timestamptz NOT NULL,
  kind           text NOT NULL CHECK (kind IN ('model', 'tool')),
  name           text NOT NULL,
  item           text NOT NULL,
  unit           text NOT NULL,
  unit_price_usd numeric NOT NULL,
  price_version  text NOT NULL,
  units          numeric NOT NULL,
  amount_usd     numeric NOT NULL,
  PRIMARY KEY (workspace_id, hour, kind, name, item, unit, unit_price_usd, price_version)
) WITH (fillfactor = 50);
CREATE INDEX hourly_lines_hour_idx ON hourly_lines (hour);

-- Every price a price version was seen charging, written at ingest the first time it is seen, so
-- the unit prices of an old version stay known after the configuration has moved on.
CREATE TABLE price_versions (
  price_version  text NOT NULL,
  kind           text NOT NULL,
  name           text NOT NULL,
  item           text NOT NULL,
  unit           text NOT NULL,
  unit_price_usd numeric NOT NULL,
  first_seen_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (price_version, kind, name, item, unit, unit_price_usd)
);

-- A closed month's statement, stored as the exact text first served, so it never changes.
CREATE TABLE statements (
  workspace_id text NOT NULL,
  month        text NOT NULL,
  tz           text NOT NULL,
  body         text NOT NULL,
  frozen_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, month, tz)
);

-- The histogram of a group of records from their buckets (0-based, as src/histogram.ts numbers them).
CREATE FUNCTION hist_of(buckets smallint[], size integer) RETURNS integer[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  counts integer[] := array_fill(0, ARRAY[size]);
  b smallint;
BEGIN
  FOREACH b IN ARRAY buckets LOOP
    counts[b + 1] := counts[b + 1] + 1;
  END LOOP;
  RETURN counts;
END
$$;

-- Element-wise sum of two histograms (a roll-up row meeting a batch's counts for the same key). In
-- PL/pgSQL because the loop over an expanded array measured twice as fast as unnest + array_agg.
CREATE FUNCTION hist_add(a integer[], b integer[]) RETURNS integer[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  total integer[] := a;
BEGIN
  FOR i IN 1 .. coalesce(array_length(b, 1), 0) LOOP
    total[i] := coalesce(total[i], 0) + b[i];
  END LOOP;
  RETURN total;
END
$$;
