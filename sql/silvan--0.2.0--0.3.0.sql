-- silvan 0.2.0 -> 0.3.0: models keep their feature names and types (and
-- models loaded before get them from their source); the model_features
-- view; predict(), predict_proba() and predict_raw() take integer[],
-- bigint[] and numeric[] features; load_model() takes a model's bytes, and
-- the catalog keeps those of binary formats (ONNX) and their class labels; schedules say where they came
-- from (the silvan.schedules view), and set_schedule() whether it changed
-- anything.
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.3.0'" to load this file. \quit

ALTER TABLE model
	ALTER COLUMN source DROP NOT NULL,
	ADD COLUMN feature_names text[] CHECK (cardinality(feature_names) = num_features),
	ADD COLUMN feature_types text[] CHECK (cardinality(feature_types) = num_features),
	ADD COLUMN source_binary bytea,
	ADD CONSTRAINT model_one_source CHECK ((source IS NULL) <> (source_binary IS NULL)),
	ADD COLUMN class_labels text[];

-- Read the names and types of the models loaded so far from their source
-- text, which load_model() parsed and validated when it stored them
CREATE FUNCTION source_features(source text, format text, OUT names text[], OUT types text[])
	AS 'MODULE_PATHNAME', 'silvan_source_features' LANGUAGE C STABLE STRICT;
UPDATE model SET (feature_names, feature_types) =
	(SELECT f.names, f.types FROM source_features(model.source, model.format) AS f);
DROP FUNCTION source_features(text, text);

CREATE OR REPLACE VIEW models AS
	SELECT id, name, format, objective, task, num_features, num_classes,
		   num_trees, max_depth, owner, created, revision,
		   coalesce(octet_length(source), octet_length(source_binary)) AS source_bytes,
		   feature_names, class_labels
	  FROM model;

-- One row per feature of every model: its position (as in feature_columns;
-- explain's feature index is position - 1), and the name and type the
-- training library recorded, NULL where it recorded none
CREATE VIEW model_features AS
	SELECT m.name AS model, p.position, m.feature_names[p.position] AS name,
		   m.feature_types[p.position] AS type
	  FROM model m, generate_series(1, m.num_features) AS p(position);
GRANT SELECT ON model_features TO PUBLIC;

CREATE FUNCTION load_model(name text, model bytea, format text DEFAULT 'auto',
						   replace boolean DEFAULT false) RETURNS bigint
	AS 'MODULE_PATHNAME', 'silvan_load_model_bytes' LANGUAGE C VOLATILE;

CREATE FUNCTION predict(model text, features integer[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'silvan_predict_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict(model text, features bigint[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'silvan_predict_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict(model text, features numeric[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'silvan_predict_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_proba(model text, features integer[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_proba(model text, features bigint[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_proba(model text, features numeric[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_proba_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_raw(model text, features integer[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_raw(model text, features bigint[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION predict_raw(model text, features numeric[]) RETURNS float8[]
	AS 'MODULE_PATHNAME', 'silvan_predict_raw_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;

ALTER TABLE schedule
	ADD COLUMN origin text NOT NULL DEFAULT 'hand' CHECK (origin IN ('hand', 'tuned')),
	ADD COLUMN provenance jsonb;

-- The stored schedules by model name: batch_size NULL applies to every size
CREATE VIEW schedules AS
	SELECT m.name AS model, s.target, s.batch_size, s.schedule, s.origin, s.provenance, s.created
	  FROM schedule s JOIN model m ON m.id = s.model_id;
GRANT SELECT ON schedules TO PUBLIC;

DROP FUNCTION set_schedule(text, text, text, integer);
CREATE FUNCTION set_schedule(model text, schedule text, target text DEFAULT 'cpu',
							 batch_size integer DEFAULT NULL) RETURNS boolean
	AS 'MODULE_PATHNAME', 'silvan_set_schedule' LANGUAGE C VOLATILE;
