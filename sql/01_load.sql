-- Loading, listing, replacing and dropping models; every load error
\set fx binary_logistic
\i sql/fixture.psql
SELECT name, format, objective, task, num_features, num_classes, num_trees, max_depth,
       owner, source_bytes > 0 AS has_source
  FROM silvan.models;

-- the catalog holds the compact form and the source
SELECT octet_length(forest) > 0 AS has_forest, length(source) = length(:'model') AS same_source
  FROM silvan.model WHERE name = 'binary_logistic';

-- duplicate name without replace
SELECT silvan.load_model('binary_logistic', :'model');
-- replace loads a new version, deployed, with an id and revision of its own; the old one stays
SELECT id AS old_id, revision AS old_revision FROM silvan.model WHERE name = 'binary_logistic' \gset
SELECT silvan.load_model('binary_logistic', :'model', replace => true) AS new_id \gset
SELECT id = :new_id AS deployed_id, version FROM silvan.models WHERE name = 'binary_logistic';
SELECT version, id = :old_id AS old_id, revision > :old_revision AS new_revision
  FROM silvan.model WHERE name = 'binary_logistic' ORDER BY version;

-- drop: true when dropped, false when absent
SELECT silvan.load_model('scratch', :'model', 'xgboost') > 0 AS loaded;
SELECT silvan.drop_model('scratch'), silvan.drop_model('scratch');

-- errors: every one leaves the catalog as it was
SELECT count(*) AS models_before FROM silvan.model \gset
SELECT silvan.load_model('bad', '{"learner": {');
SELECT silvan.load_model('bad', left(:'model', 5000));
SELECT silvan.load_model('bad', 'hello world');
SELECT silvan.load_model('bad', :'model', 'onnx');
SELECT silvan.load_model('bad', replace(:'model', '"gbtree"', '"gblinear"'));
SELECT silvan.load_model('bad', replace(:'model', '"binary:logistic"', '"binary:magic"'));
SELECT silvan.load_model('bad', regexp_replace(:'model', '"left_children":\[1,', '"left_children":[99,'));
SELECT silvan.load_model('bad', regexp_replace(:'model', '"left_children":\[1,', '"left_children":[0,'));
SELECT silvan.load_model('bad', regexp_replace(:'model', '"split_indices":\[[0-9]+,', '"split_indices":[4000,'));
SELECT silvan.load_model('bad', :'model', 'lightgbm');
SELECT silvan.load_model('bad', E'tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=0\nobjective=regression\n\nTree=0\nnum_leaves=2\nnum_cat=0\nsplit_feature=0\nthreshold=0.5\ndecision_type=2\nleft_child=-1\nright_child=-2\nleaf_value=1 2\nis_linear=1\nshrinkage=1\n\nend of trees\n');
SELECT silvan.load_model('', :'model');
SELECT silvan.load_model(NULL, :'model');
SELECT count(*) = :models_before AS catalog_unchanged FROM silvan.model;

-- a LightGBM model, detected from its text
\set lgb `cat test/fixtures/lightgbm_small.txt`
SELECT silvan.load_model('lgb_small', :'lgb') > 0 AS loaded;
SELECT name, format, objective, task, num_features, num_trees FROM silvan.models
 WHERE name = 'lgb_small';
-- truncated LightGBM text, an unsupported LightGBM objective, a bad child index
SELECT silvan.load_model('bad', left(:'lgb', 400));
SELECT silvan.load_model('bad', replace(:'lgb', 'objective=binary sigmoid:1', 'objective=focal_loss'));
SELECT silvan.load_model('bad', replace(:'lgb', 'left_child=1 -1', 'left_child=7 -1'));

-- a model's bytes (bytea): text formats are kept as text, which they must be
SELECT silvan.load_model('lgb_bytes', convert_to(:'lgb', 'UTF8')) > 0 AS loaded_bytes;
SELECT name, format, source_bytes = octet_length(:'lgb') AS whole_source FROM silvan.models
 WHERE name = 'lgb_bytes';
SELECT source = :'lgb' AS kept_as_text, source_binary IS NULL AS no_bytes FROM silvan.model
 WHERE name = 'lgb_bytes';
SELECT silvan.predict('lgb_bytes', ARRAY[1, 3]) = silvan.predict('lgb_small', ARRAY[1, 3]) AS same_model;
SELECT silvan.load_model('bad', '\x00010203'::bytea);
SELECT silvan.load_model('bad', convert_to(:'lgb', 'UTF8') || '\x00'::bytea);
SELECT silvan.load_model('bad', convert_to(replace(:'lgb', 'feature_names=x cat', 'feature_names=x c'), 'UTF8')
								|| '\xff'::bytea);
SELECT silvan.load_model('bad', convert_to(replace(:'lgb', 'feature_names=x cat', E'feature_names=x c\u00e9t'), 'LATIN1'));
SELECT silvan.drop_model('lgb_bytes');
