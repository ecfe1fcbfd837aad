-- silvan 0.11.0 -> 0.12.0: silvan on Citus.  silvan.distribute() makes the
-- catalog Citus reference tables on a coordinator, so that models reach
-- every node; silvan_internal.alter_catalog_table() lets later update
-- scripts change a catalog table on a distributed catalog too.
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.12.0'" to load this file. \quit

-- Citus: the catalog tables that scoring reads become reference tables, so
-- that every write on the coordinator reaches every node in its
-- transaction (two-phase commit) and each node scores from its own copy
-- (citus.c).  Their foreign keys go first: Citus would otherwise make the
-- tables that reference them coordinator-only; silvan's functions keep
-- the rows consistent themselves.  The coordinator's own tables keep no
-- rows afterwards.  Idempotent: a later call copies the catalog to nodes
-- added since.
CREATE FUNCTION distribute()
	RETURNS TABLE (catalog_table regclass, nodes integer)
	LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET client_min_messages = warning AS $$
DECLARE
	tables constant text[] := ARRAY['registry', 'model', 'model_alias', 'schedule', 'profile'];
	t text;
	c record;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
		RAISE EXCEPTION 'silvan.distribute() needs Citus'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'The extension citus is not installed in this database.',
				  HINT = 'Without Citus there is nothing to distribute: every model is on this server.';
	END IF;
	IF NOT pg_catalog.citus_is_coordinator() THEN
		RAISE EXCEPTION 'silvan.distribute() runs on the Citus coordinator'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'This node is not the coordinator of its Citus cluster.';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node n WHERE n.groupid OPERATOR(pg_catalog.=) 0) THEN
		RAISE EXCEPTION 'silvan.distribute() needs the coordinator in Citus'' metadata'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'pg_dist_node has no row for the coordinator (group 0), so reference tables have no copy on it and silvan could not read its catalog there.',
				  HINT = 'Run SELECT citus_set_coordinator_host(''<its host name>'', <its port>); first.';
	END IF;
	PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
	FOR c IN SELECT con.conrelid::pg_catalog.regclass AS rel, con.conname
			   FROM pg_catalog.pg_constraint con
			  WHERE con.contype OPERATOR(pg_catalog.=) 'f'
				AND con.connamespace OPERATOR(pg_catalog.=) 'silvan'::pg_catalog.regnamespace
				AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p
								 WHERE p.logicalrelid OPERATOR(pg_catalog.=) con.conrelid)
	LOOP
		EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', c.rel, c.conname);
	END LOOP;
	FOREACH t IN ARRAY tables LOOP
		IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p
						WHERE p.logicalrelid OPERATOR(pg_catalog.=) pg_catalog.format('silvan.%I', t)::pg_catalog.regclass) THEN
			PERFORM pg_catalog.create_reference_table(pg_catalog.format('silvan.%I', t)::pg_catalog.regclass);
			PERFORM pg_catalog.truncate_local_data_after_distributing_table(pg_catalog.format('silvan.%I', t)::pg_catalog.regclass);
		END IF;
	END LOOP;
	PERFORM pg_catalog.replicate_reference_tables('block_writes');
	RETURN QUERY
		SELECT s.logicalrelid::pg_catalog.regclass, pg_catalog.count(p.placementid)::integer
		  FROM pg_catalog.unnest(tables) WITH ORDINALITY AS u(name, n)
		  JOIN pg_catalog.pg_dist_shard s
			ON s.logicalrelid OPERATOR(pg_catalog.=) pg_catalog.format('silvan.%I', u.name)::pg_catalog.regclass
		  JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid
		 GROUP BY s.logicalrelid, u.n
		 ORDER BY u.n;
END
$$;
REVOKE ALL ON FUNCTION distribute() FROM PUBLIC;
COMMENT ON FUNCTION distribute() IS
	'on a Citus coordinator: make silvan''s catalog reference tables, so that models, schedules and grants reach every node in the transaction that writes them; idempotent, and copies them to nodes added since; returns each catalog table with its number of copies';

-- For the update scripts of later versions: apply an ALTER TABLE action to
-- a catalog table.  On Citus, ALTER EXTENSION UPDATE runs the script on
-- every node; there the table's DDL is not propagated (Citus would send it
-- to the other nodes, which run it themselves) and the same action is
-- applied to this node's placement of the table, so that each node's
-- table and copy keep the same columns.
CREATE FUNCTION silvan_internal.alter_catalog_table(catalog_table text, action text)
	RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	shell regclass := pg_catalog.format('silvan.%I', catalog_table)::pg_catalog.regclass;
	placement regclass;
	propagation text;
BEGIN
	IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL OR NOT EXISTS (
		SELECT 1 FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid OPERATOR(pg_catalog.=) shell) THEN
		EXECUTE pg_catalog.format('ALTER TABLE %s %s', shell, action);
		RETURN;
	END IF;
	propagation := pg_catalog.current_setting('citus.enable_ddl_propagation');
	PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
	EXECUTE pg_catalog.format('ALTER TABLE %s %s', shell, action);
	SELECT pg_catalog.to_regclass(pg_catalog.format('silvan.%I', catalog_table || '_' || s.shardid)) INTO placement
	  FROM pg_catalog.pg_dist_shard s WHERE s.logicalrelid OPERATOR(pg_catalog.=) shell;
	IF placement IS NOT NULL THEN
		PERFORM pg_catalog.set_config('citus.enable_manual_changes_to_shards', 'on', true);
		EXECUTE pg_catalog.format('ALTER TABLE %s %s', placement, action);
	END IF;
	PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', propagation, true);
END
$$;
REVOKE ALL ON FUNCTION silvan_internal.alter_catalog_table(text, text) FROM PUBLIC;
COMMENT ON FUNCTION silvan_internal.alter_catalog_table(text, text) IS
	'for update scripts: ALTER TABLE on a catalog table, and on this node''s Citus placement of it when the catalog is distributed';

-- The rows of the views that show what only the catalog's owner reads
-- (schedules, sources, tuning jobs): read as the owner, through this
-- node's copy of the catalog, and kept where the caller holds SELECT on
-- the model (a job: the privileges of its owner).  On Citus a view's owner
-- does not carry into the queries run on the placements; these functions
-- read none through Citus.
CREATE FUNCTION schedule_rows()
	RETURNS TABLE (model text, target text, batch_size integer, schedule text, origin text,
				   provenance jsonb, created timestamptz, version integer)
	AS 'MODULE_PATHNAME', 'silvan_schedule_rows' LANGUAGE C VOLATILE;
CREATE FUNCTION model_source_rows()
	RETURNS TABLE (model text, version integer, format text, source text, source_binary bytea,
				   source_sha256 text)
	AS 'MODULE_PATHNAME', 'silvan_model_source_rows' LANGUAGE C VOLATILE;
CREATE FUNCTION tuning_job_rows()
	RETURNS TABLE (job bigint, model text, owner regrole, state text, phase text, batch_size integer,
				   candidates_done integer, candidates_planned integer, best_us_per_row float8,
				   default_us_per_row float8, error text, result jsonb, batch_sizes integer[],
				   strategy text, budget interval, exact boolean, created timestamptz,
				   started timestamptz, finished timestamptz, version integer)
	AS 'MODULE_PATHNAME', 'silvan_tuning_job_rows' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION schedule_rows() IS
	'the rows of silvan.schedules: the schedules of the models the calling role holds SELECT on';
COMMENT ON FUNCTION model_source_rows() IS
	'the rows of silvan.model_sources: the sources of the models the calling role holds SELECT on';
COMMENT ON FUNCTION tuning_job_rows() IS
	'the rows of silvan.tuning_jobs: the jobs of the roles whose privileges the calling role has';
CREATE OR REPLACE VIEW schedules WITH (security_barrier = true) AS SELECT * FROM schedule_rows();
CREATE OR REPLACE VIEW model_sources WITH (security_barrier = true) AS SELECT * FROM model_source_rows();
CREATE OR REPLACE VIEW tuning_jobs WITH (security_barrier = true) AS SELECT * FROM tuning_job_rows();

-- model_stats' descriptions, reworded
COMMENT ON VIEW model_stats IS
	'usage per model version: batches and rows scored, time scoring, compiles and code cache loads, last use (every connection''s when silvan is preloaded, else the calling connection''s)';
COMMENT ON COLUMN model_stats.scope IS 'server (silvan preloaded: every connection''s scoring) or session (the calling connection''s only)';
