"""postgres_schema: taskqueue's schema on PostgreSQL, one migration per version (the SQL
that :mod:`taskqueue.storage_postgres` applies on start under an advisory lock, so that
servers starting at once migrate once). Kept apart from the store: it is SQL, not Python,
and a migration once shipped is never edited, only followed by the next one.

Schema 1 made the tables; schema 2 is what the seed-000 mix measured under
pg_stat_statements asked for: `tasks` indexes no column that changes and has room on each page
(fillfactor 50), so a claim or an outcome is a HOT update; the small `unfinished` table holds
what claims and lease expiry look for; and `taskqueue_write` applies a whole group commit,
new tasks, state changes and claims, in one call.
"""

from __future__ import annotations

MIGRATION_LOCK = 0x7461736B71
"""MIGRATION_LOCK is the advisory lock key that serialises schema migrations ("taskq")."""

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE tasks (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        type text NOT NULL,
        params text NOT NULL,
        status text NOT NULL,
        submitted_at double precision NOT NULL,
        started_at double precision,
        finished_at double precision,
        attempts integer NOT NULL DEFAULT 0,
        error text,
        lease_until double precision,
        idem_key text UNIQUE,
        idem_hash text,
        owner text
    );
    CREATE INDEX tasks_status_seq ON tasks (status, seq);
    CREATE INDEX tasks_finished_at ON tasks (finished_at) WHERE finished_at IS NOT NULL;
    CREATE TABLE results (
        seq bigint PRIMARY KEY,
        content_type text NOT NULL,
        body bytea NOT NULL
    );
    """,
    # 2: state changes stop touching indexes, and one function writes a whole group commit.
    # `tasks` keeps only indexes on columns that never change (seq, id, idem_key, submitted_at)
    # and leaves half of each page free, so that a claim or an outcome is a HOT update: no new
    # index entries, no dead ones for the next claim to wade through (with status indexed, a
    # claim read about 300 buffers). Which tasks are waiting or leased is kept in `unfinished`,
    # one small row per QUEUED or RUNNING task (lease_until NULL while QUEUED), deleted when the
    # task finishes: claims and lease expiry search that small table instead.
    """
    ALTER TABLE tasks SET (fillfactor = 50);
    DROP INDEX tasks_status_seq;
    DROP INDEX tasks_finished_at;
    ALTER TABLE tasks DROP CONSTRAINT tasks_idem_key_key;
    CREATE UNIQUE INDEX tasks_idem_key ON tasks (idem_key) WHERE idem_key IS NOT NULL;
    CREATE INDEX tasks_submitted_at ON tasks (submitted_at);
    CREATE TABLE unfinished (
        seq bigint PRIMARY KEY,
        type text NOT NULL,
        lease_until double precision
    );
    CREATE INDEX unfinished_queued ON unfinished (type, seq) WHERE lease_until IS NULL;
    INSERT INTO unfinished (seq, type, lease_until)
    SELECT seq, type, CASE WHEN status = 'RUNNING' THEN coalesce(lease_until, 0) END
    FROM tasks WHERE status IN ('QUEUED', 'RUNNING');

    CREATE FUNCTION taskqueue_write(
        i_id text[], i_type text[], i_params text[], i_status text[],
        i_submitted_at float8[], i_attempts int[], i_idem_key text[], i_idem_hash text[],
        u_seq bigint[], u_status text[], u_started_at float8[], u_finished_at float8[],
        u_attempts int[], u_error text[], u_lease_until float8[], u_prior_status text[],
        u_prior_attempts int[], u_content_type text[], u_body bytea[],
        c_type text[], c_limit int[], c_lease_s float8[],
        p_owner text, p_channel text, p_notice text, p_release text[]
    ) RETURNS TABLE (
        r_op text, r_ord int, r_seq bigint, r_id text, r_type text, r_params text,
        r_status text, r_submitted_at float8, r_started_at float8, r_finished_at float8,
        r_attempts int, r_error text, r_lease_until float8, r_idem_key text, r_idem_hash text
    ) LANGUAGE plpgsql
    -- Its statements' plans are cached per connection, often first made while the tables are
    -- small; a join made then as a hash over a sequential scan would read all of `tasks` at
    -- every call once it has grown (seen: 240 buffers per state change). Every row here is
    -- reached by its key, so never by a scan.
    SET enable_seqscan = off
    AS $fn$
    DECLARE
        k int;
        now_s float8;
    BEGIN
        -- Claims whose answer this server never got (the connection broke while they
        -- committed): nobody runs their tasks, so they go back to the queue, the attempt
        -- refunded, instead of waiting out their lease. (Its locks come before those of the
        -- state changes below; a cycle with another server would need that server to change
        -- one of these unrun tasks, and would end in a deadlock error, the batch then
        -- retried op by op.)
        IF cardinality(p_release) > 0 THEN
            WITH x AS (
                SELECT f.seq FROM unfinished f JOIN tasks t ON t.seq = f.seq
                WHERE f.lease_until IS NOT NULL AND t.owner = ANY(p_release)
                ORDER BY f.seq FOR UPDATE OF f
            ), back AS (
                UPDATE tasks t SET status = 'QUEUED', attempts = t.attempts - 1,
                    started_at = NULL, lease_until = NULL, owner = NULL
                FROM x WHERE t.seq = x.seq AND t.status = 'RUNNING'
                  AND t.owner = ANY(p_release)
                RETURNING t.seq
            )
            UPDATE unfinished f SET lease_until = NULL FROM back WHERE f.seq = back.seq;
        END IF;
        -- New tasks, and a notice to the other servers (delivered at commit).
        IF cardinality(i_id) > 0 THEN
            RETURN QUERY
            WITH ins AS (
                INSERT INTO tasks (id, type, params, status, submitted_at, attempts, idem_key,
                                   idem_hash)
                SELECT * FROM unnest(i_id, i_type, i_params, i_status, i_submitted_at,
                                     i_attempts, i_idem_key, i_idem_hash)
                RETURNING seq, id, type, status
            ), w AS (
                INSERT INTO unfinished (seq, type, lease_until)
                SELECT ins.seq, ins.type, CASE WHEN ins.status = 'RUNNING' THEN 0 END
                FROM ins WHERE ins.status IN ('QUEUED', 'RUNNING')
            )
            SELECT 'i', NULL::int, ins.seq, ins.id, NULL, NULL, NULL, NULL::float8,
                   NULL::float8, NULL::float8, NULL::int, NULL, NULL::float8, NULL, NULL
            FROM ins;
            PERFORM pg_notify(p_channel, p_notice);
        END IF;
        -- State changes, each a compare-and-set on (status, attempts) when it has a prior
        -- state. Locks are taken in one order everywhere: a task's `unfinished` row (by seq),
        -- then its `tasks` row; claims and lease expiry skip what is locked, so only this
        -- waits, and never in a cycle.
        IF cardinality(u_seq) > 0 THEN
            PERFORM 1 FROM unfinished WHERE seq = ANY(u_seq) ORDER BY seq FOR UPDATE;
            RETURN QUERY
            WITH v AS (
                SELECT * FROM unnest(u_seq, u_status, u_started_at, u_finished_at, u_attempts,
                                     u_error, u_lease_until, u_prior_status, u_prior_attempts,
                                     u_content_type, u_body)
                    AS v(seq, status, started_at, finished_at, attempts, error, lease_until,
                         prior_status, prior_attempts, content_type, body)
            ), u AS (
                UPDATE tasks t SET status = v.status, started_at = v.started_at,
                    finished_at = v.finished_at, attempts = v.attempts, error = v.error,
                    lease_until = v.lease_until,
                    owner = CASE WHEN v.status = 'RUNNING' THEN t.owner END
                FROM v
                WHERE t.seq = v.seq
                  AND (v.prior_status IS NULL
                       OR (t.status = v.prior_status AND t.attempts = v.prior_attempts))
                RETURNING t.seq, t.type, t.status, t.lease_until
            ), gone AS (
                DELETE FROM unfinished f USING u
                WHERE f.seq = u.seq AND u.status NOT IN ('QUEUED', 'RUNNING')
            ), kept AS (
                INSERT INTO unfinished (seq, type, lease_until)
                SELECT u.seq, u.type,
                       CASE WHEN u.status = 'RUNNING' THEN coalesce(u.lease_until, 0) END
                FROM u WHERE u.status IN ('QUEUED', 'RUNNING')
                ON CONFLICT (seq) DO UPDATE SET lease_until = EXCLUDED.lease_until
            ), r AS (
                INSERT INTO results (seq, content_type, body)
                SELECT v.seq, v.content_type, v.body FROM v JOIN u ON u.seq = v.seq
                WHERE v.body IS NOT NULL
                ON CONFLICT (seq) DO UPDATE
                    SET content_type = EXCLUDED.content_type, body = EXCLUDED.body
            )
            SELECT 'u', NULL::int, u.seq, NULL, NULL, NULL, NULL, NULL::float8,
                   NULL::float8, NULL::float8, NULL::int, NULL, NULL::float8, NULL, NULL
            FROM u;
        END IF;
        -- Claims: the oldest QUEUED tasks of a kind (those inserted above included), skipping
        -- rows other servers hold and the tasks changed above (their runs are ending).
        FOR k IN 1 .. coalesce(cardinality(c_type), 0) LOOP
            now_s := extract(epoch from clock_timestamp());
            RETURN QUERY
            WITH c AS (
                SELECT f.seq FROM unfinished f
                WHERE f.lease_until IS NULL AND f.type = c_type[k] AND f.seq <> ALL(u_seq)
                ORDER BY f.seq LIMIT c_limit[k]
                FOR UPDATE SKIP LOCKED
            ), claimed AS (
                UPDATE tasks t SET status = 'RUNNING', attempts = t.attempts + 1,
                    started_at = now_s, finished_at = NULL, error = NULL, owner = p_owner,
                    lease_until = now_s + c_lease_s[k]
                        + coalesce((t.params::jsonb ->> 'timeout_ms')::float8 / 1000, 0)
                FROM c WHERE t.seq = c.seq AND t.status = 'QUEUED'
                RETURNING t.*
            ), w AS (
                UPDATE unfinished f SET lease_until = claimed.lease_until
                FROM claimed WHERE f.seq = claimed.seq
            )
            SELECT 'c', k, claimed.seq, claimed.id, claimed.type, claimed.params,
                   claimed.status, claimed.submitted_at, claimed.started_at,
                   claimed.finished_at, claimed.attempts, claimed.error, claimed.lease_until,
                   claimed.idem_key, claimed.idem_hash
            FROM claimed;
        END LOOP;
    END
    $fn$;
    """,
)
"""MIGRATIONS: the schema, one entry per version; applied in order, never edited once shipped."""
