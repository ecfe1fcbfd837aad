-- Every object of the extension explains itself in \df+, \dv+, \dt+ and
-- \d+: each member has a description, and so do the extension's schema and
-- every silvan.* setting.  The catalog's trigger function is out of the
-- users' way, in the extension's own schema silvan_internal.
\set QUIET on

-- members of the extension without a description (none)
SELECT pg_describe_object(d.classid, d.objid, 0) AS undescribed
  FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'silvan')
   AND coalesce(obj_description(d.objid, d.classid::regclass::name), '') = ''
 ORDER BY 1;
-- members by kind: each kind is checked above
SELECT CASE d.classid
	       WHEN 'pg_proc'::regclass THEN 'function'
	       WHEN 'pg_namespace'::regclass THEN 'schema'
	       WHEN 'pg_type'::regclass THEN 'type'
	       WHEN 'pg_class'::regclass THEN
	            (SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view'
	                                   WHEN 'S' THEN 'sequence' ELSE c.relkind::text END
	               FROM pg_class c WHERE c.oid = d.objid)
	       ELSE d.classid::regclass::text END AS kind,
       count(*) AS members
  FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'silvan')
 GROUP BY 1 ORDER BY 1;
-- the extension's schema, made by CREATE EXTENSION, is described too
SELECT obj_description('silvan'::regnamespace, 'pg_namespace') <> '' AS silvan_described;

-- the trigger function is in silvan_internal, not in silvan; the schema is
-- the extension's, and no role but its owner may use it
SELECT p.oid::regprocedure AS trigger_function, p.pronamespace::regnamespace AS schema
  FROM pg_proc p WHERE p.proname = 'catalog_changed';
SELECT count(*) AS functions_in_silvan_returning_trigger
  FROM pg_proc WHERE pronamespace = 'silvan'::regnamespace AND prorettype = 'trigger'::regtype;
SELECT deptype FROM pg_depend
 WHERE classid = 'pg_namespace'::regclass AND objid = 'silvan_internal'::regnamespace
   AND refclassid = 'pg_extension'::regclass;
SELECT has_schema_privilege('public', 'silvan_internal', 'USAGE') AS public_usage,
       has_function_privilege('public', 'silvan_internal.catalog_changed()', 'EXECUTE') AS public_execute;
SELECT tgrelid::regclass AS catalog_table, tgfoid::regprocedure AS fires
  FROM pg_trigger WHERE tgfoid = 'silvan_internal.catalog_changed()'::regprocedure ORDER BY 1;

-- the columns of the views and tables described (the non-obvious ones)
SELECT a.attrelid::regclass AS relation,
       count(*) FILTER (WHERE col_description(a.attrelid, a.attnum) <> '') AS described,
       count(*) AS columns
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 WHERE c.relnamespace = 'silvan'::regnamespace AND c.relkind IN ('r', 'v')
   AND a.attnum > 0 AND NOT a.attisdropped
 GROUP BY a.attrelid ORDER BY a.attrelid::regclass::text;

-- the settings: a short description each (they exist once the library is loaded)
LOAD 'silvan';
SELECT name AS setting_without_description FROM pg_settings
 WHERE name LIKE 'silvan.%' AND coalesce(short_desc, '') = '';
SELECT count(*) > 15 AS settings FROM pg_settings WHERE name LIKE 'silvan.%';

-- a role writing through silvan's functions still fires the triggers: a
-- backend that cached a model sees it replaced
CREATE ROLE regress_silvan_writer;
SET ROLE regress_silvan_writer;
\set m `cat test/fixtures/binary_logistic.json`
SELECT silvan.load_model('comments_model', :'m') > 0 AS loaded;
SELECT silvan.predict('comments_model', ARRAY[0.5, 0.5, 0.5, 0.5, 0.5, 0.5]::float8[]) AS before_replace \gset
\set m `cat test/fixtures/binary_base_score.json`
SELECT silvan.load_model('comments_model', :'m', replace => true) > 0 AS replaced;
SELECT silvan.predict('comments_model', ARRAY[0.5, 0.5, 0.5, 0.5, 0.5, 0.5]::float8[]) <> :before_replace AS sees_the_new_model;
SELECT silvan.drop_model('comments_model');
RESET ROLE;
DROP ROLE regress_silvan_writer;

-- DROP EXTENSION drops silvan_internal with it
SET client_min_messages = warning;
DROP EXTENSION silvan CASCADE;
RESET client_min_messages;
SELECT count(*) AS silvan_internal_left FROM pg_namespace WHERE nspname = 'silvan_internal';
CREATE EXTENSION silvan;
SELECT count(*) AS silvan_internal_back FROM pg_namespace WHERE nspname = 'silvan_internal';
