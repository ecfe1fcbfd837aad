-- Catalog writers run as the catalog's owner; a caller must not be able to
-- make them run code of the caller's choosing (CVE-2018-1058's class of
-- bug).  An attacker shadows functions, operators and the types used in
-- casts from a schema of its own and from pg_temp, placed before and after
-- pg_catalog, and calls every writer.
\set QUIET on
\set model `cat test/fixtures/binary_logistic.json`
-- one call of a writer, as whoever calls: 'ok' or its SQLSTATE and message
-- (names qualified: it runs under the attacker's search_path)
CREATE FUNCTION public.regress_try(call text, query text, arg text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE query USING arg;
	RETURN pg_catalog.format('%s: ok', call);
EXCEPTION WHEN OTHERS THEN
	RETURN pg_catalog.format('%s: %s %s', call, SQLSTATE, SQLERRM);
END $$;
CREATE ROLE regress_silvan_attacker;
CREATE ROLE regress_silvan_alice;
CREATE SCHEMA evil AUTHORIZATION regress_silvan_attacker;
SET ROLE regress_silvan_alice;
SELECT silvan.load_model('alice_m', :'model') > 0 AS alice_loaded;
-- the attacker may score with alice's model, not change it
SELECT silvan.grant('alice_m', 'regress_silvan_attacker', 'usage');
RESET ROLE;

SET ROLE regress_silvan_attacker;
-- what ran, as whom; a trap that makes the attacker superuser if it can
CREATE TABLE evil.ran (who text, what text);
CREATE TABLE evil.rows AS SELECT 1::bigint AS id, '{1,2,3,4,5,6}'::real[] AS f;
GRANT ALL ON evil.ran TO PUBLIC;
GRANT USAGE ON SCHEMA evil TO PUBLIC;
CREATE FUNCTION evil.trap(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO evil.ran VALUES (pg_catalog.current_user()::pg_catalog.text, what);
	BEGIN
		EXECUTE 'ALTER ROLE regress_silvan_attacker SUPERUSER';
	EXCEPTION WHEN insufficient_privilege THEN NULL;
	END;
	RETURN true;
END $$;
-- functions: same signatures (win when evil comes first) and better
-- matches for unknown-type literals (win wherever evil is in the path)
CREATE FUNCTION evil.nextval(text) RETURNS bigint LANGUAGE sql
	AS $$ SELECT evil.trap('nextval(text)'); SELECT pg_catalog.nextval($1::pg_catalog.regclass) $$;
CREATE FUNCTION evil.nextval(regclass) RETURNS bigint LANGUAGE sql
	AS $$ SELECT evil.trap('nextval(regclass)'); SELECT pg_catalog.nextval($1) $$;
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql
	AS $$ SELECT evil.trap('now()'); SELECT pg_catalog.now() $$;
CREATE FUNCTION evil.md5(text) RETURNS text LANGUAGE sql
	AS $$ SELECT evil.trap('md5(text)'); SELECT pg_catalog.md5($1) $$;
CREATE FUNCTION evil.string_agg_t(text, text, text) RETURNS text LANGUAGE sql
	AS $$ SELECT evil.trap('string_agg'); SELECT pg_catalog.concat($1, $3, $2) $$;
CREATE AGGREGATE evil.string_agg(text, text) (SFUNC = evil.string_agg_t, STYPE = text);
CREATE FUNCTION evil.int8(integer) RETURNS bigint LANGUAGE sql
	AS $$ SELECT evil.trap('int8(integer)'); SELECT $1::pg_catalog.int8 $$;
CREATE FUNCTION evil.regrole(oid) RETURNS regrole LANGUAGE sql
	AS $$ SELECT evil.trap('regrole(oid)'); SELECT $1::pg_catalog.regrole $$;
-- operators for every pair of types the writers compare or concatenate
CREATE FUNCTION evil.eq(text, text) RETURNS boolean LANGUAGE sql
	AS $$ SELECT evil.trap('text = text'); SELECT $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.eq);
CREATE FUNCTION evil.eq(bigint, bigint) RETURNS boolean LANGUAGE sql
	AS $$ SELECT evil.trap('bigint = bigint'); SELECT $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.eq);
CREATE FUNCTION evil.eq(integer, integer) RETURNS boolean LANGUAGE sql
	AS $$ SELECT evil.trap('integer = integer'); SELECT $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR evil.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = evil.eq);
CREATE FUNCTION evil.eq(oid, oid) RETURNS boolean LANGUAGE sql
	AS $$ SELECT evil.trap('oid = oid'); SELECT $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR evil.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = evil.eq);
CREATE FUNCTION evil.eq(regrole, regrole) RETURNS boolean LANGUAGE sql
	AS $$ SELECT evil.trap('regrole = regrole'); SELECT $1::pg_catalog.oid OPERATOR(pg_catalog.=) $2::pg_catalog.oid $$;
CREATE OPERATOR evil.= (LEFTARG = regrole, RIGHTARG = regrole, FUNCTION = evil.eq);
CREATE FUNCTION evil.ne(text, text) RETURNS boolean LANGUAGE sql
	AS $$ SELECT evil.trap('text <> text'); SELECT $1 OPERATOR(pg_catalog.<>) $2 $$;
CREATE OPERATOR evil.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.ne);
CREATE FUNCTION evil.cat(text, text) RETURNS text LANGUAGE sql
	AS $$ SELECT evil.trap('text || text'); SELECT $1 OPERATOR(pg_catalog.||) $2 $$;
CREATE OPERATOR evil.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.cat);
-- types named like the ones casts use: a cast to them runs the check as whoever casts
CREATE FUNCTION evil.check_value(what text) RETURNS boolean LANGUAGE sql
	AS $$ SELECT evil.trap(what) $$;
CREATE DOMAIN evil.text AS pg_catalog.text CHECK (evil.check_value('domain text'));
CREATE DOMAIN evil.regclass AS pg_catalog.regclass CHECK (evil.check_value('domain regclass'));
CREATE DOMAIN evil.regrole AS pg_catalog.regrole CHECK (evil.check_value('domain regrole'));
CREATE DOMAIN evil.int8 AS pg_catalog.int8 CHECK (evil.check_value('domain int8'));
CREATE DOMAIN evil.oid AS pg_catalog.oid CHECK (evil.check_value('domain oid'));
CREATE DOMAIN evil.int4 AS pg_catalog.int4 CHECK (evil.check_value('domain int4'));
CREATE DOMAIN evil.bytea AS pg_catalog.bytea CHECK (evil.check_value('domain bytea'));
-- the same from pg_temp: tables (searched first unless placed later), types
-- and functions and operators (never searched there without a schema)
CREATE TEMP TABLE model (id bigint, name text, owner oid, revision bigint);
CREATE TEMP TABLE schedule (model_id bigint, target text, batch_size int, schedule text);
CREATE TEMP TABLE profile (model_id bigint, revision bigint, num_rows bigint, node_hits bigint[]);
CREATE FUNCTION pg_temp.trap_row() RETURNS trigger LANGUAGE plpgsql
	AS $$ BEGIN PERFORM evil.trap('pg_temp table ' || TG_TABLE_NAME); RETURN NULL; END $$;
CREATE TRIGGER t BEFORE INSERT OR UPDATE OR DELETE ON pg_temp.model FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.trap_row();
CREATE TRIGGER t BEFORE INSERT OR UPDATE OR DELETE ON pg_temp.schedule FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.trap_row();
CREATE TRIGGER t BEFORE INSERT OR UPDATE OR DELETE ON pg_temp.profile FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.trap_row();
CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (evil.check_value('pg_temp domain text'));
CREATE DOMAIN pg_temp.regclass AS pg_catalog.regclass CHECK (evil.check_value('pg_temp domain regclass'));
CREATE DOMAIN pg_temp.regrole AS pg_catalog.regrole CHECK (evil.check_value('pg_temp domain regrole'));
CREATE FUNCTION pg_temp.nextval(text) RETURNS bigint LANGUAGE sql
	AS $$ SELECT evil.trap('pg_temp.nextval(text)'); SELECT pg_catalog.nextval($1::pg_catalog.regclass) $$;
CREATE OPERATOR pg_temp.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.eq);
RESET ROLE;

-- every writer under each search_path
\set path 'evil, pg_catalog'
\i sql/hijack.psql
\set path 'pg_catalog, evil'
\i sql/hijack.psql
\set path 'pg_temp, evil, pg_catalog'
\i sql/hijack.psql
\set path 'evil'
\i sql/hijack.psql
\set path 'pg_catalog, pg_temp, evil'
\i sql/hijack.psql

-- set_schedule and profile check ownership before any work: a bad schedule
-- is not even parsed, and a table the caller cannot read is not scanned
SET ROLE regress_silvan_attacker;
SELECT silvan.set_schedule('alice_m', 'no such directive(x)');
SELECT silvan.reset_schedules('alice_m', 'no such target');
SELECT silvan.profile('alice_m', 'pg_authid', 'oid');
SELECT silvan.profile('alice_m', 'SELECT oid, 1 FROM pg_authid');
RESET ROLE;

-- clean up the attacker's objects, in evil and in pg_temp
DROP OWNED BY regress_silvan_attacker;

-- models of a role that goes: reassign_models() gives them to another
-- role; it needs the privileges of both roles, as REASSIGN OWNED does
CREATE ROLE regress_silvan_bob;
SET ROLE regress_silvan_bob;
SELECT silvan.reassign_models('regress_silvan_alice', 'regress_silvan_bob');
RESET ROLE;
GRANT regress_silvan_bob TO regress_silvan_alice;
SET ROLE regress_silvan_alice;
SELECT silvan.reassign_models('regress_silvan_alice', 'regress_silvan_bob') AS reassigned;
SELECT name, owner FROM silvan.models WHERE name = 'alice_m';
SELECT silvan.reassign_models('regress_silvan_bob', 'regress_silvan_alice') AS reassigned;
SELECT silvan.reassign_models('regress_silvan_alice', '4294967295') AS reassigned;
RESET ROLE;
REVOKE regress_silvan_bob FROM regress_silvan_alice;
-- a role dropped with its models still in the catalog leaves them to the
-- database's owner: they show the role's OID as owner
CREATE ROLE regress_silvan_carol;
SET ROLE regress_silvan_carol;
SELECT silvan.load_model('carol_m', :'model') > 0 AS carol_loaded;
RESET ROLE;
SELECT 'regress_silvan_carol'::regrole::oid AS carol_oid \gset
DROP ROLE regress_silvan_carol;
SELECT owner::oid = :carol_oid AS owned_by_dropped_role FROM silvan.models WHERE name = 'carol_m';
SELECT datdba::regrole AS database_owner FROM pg_database WHERE datname = current_database() \gset
CREATE ROLE regress_silvan_dbo;
\set ECHO none
SELECT format('ALTER DATABASE %I OWNER TO regress_silvan_dbo', current_database()) \gexec
\set ECHO all
SET ROLE regress_silvan_bob;
SELECT silvan.reassign_models(:'carol_oid', 'regress_silvan_bob');
SELECT silvan.drop_model('carol_m');
SET ROLE regress_silvan_dbo;
SELECT silvan.reassign_models(:'carol_oid', 'regress_silvan_dbo') AS reassigned;
SELECT name, owner FROM silvan.models WHERE name = 'carol_m';
SELECT silvan.drop_model('carol_m');
RESET ROLE;
\set ECHO none
SELECT format('ALTER DATABASE %I OWNER TO %I', current_database(), :'database_owner') \gexec
\set ECHO all
SELECT silvan.drop_model('alice_m');
DROP ROLE regress_silvan_attacker, regress_silvan_alice, regress_silvan_bob, regress_silvan_dbo;
DROP FUNCTION public.regress_try(text, text, text);
