-- silvan 0.4.0 -> 0.5.0: models' binary forms are stored uncompressed, so
-- that a fresh backend reads them faster.  Forms stored before keep their
-- compression until the model is loaded again (load_model(..., replace =>
-- true)); nothing else changes.
\echo Use "ALTER EXTENSION silvan UPDATE TO '0.5.0'" to load this file. \quit

-- A fresh backend detoasts a model's binary form before its first
-- prediction: stored uncompressed, a 61,000-node model's form (1 MB) is
-- read in 0.3 ms, against 2.4 ms to decompress pglz's and 0.45 ms lz4's
-- (a third of its first prediction before); forms compress by half at best
ALTER TABLE silvan.model ALTER COLUMN forest SET STORAGE EXTERNAL;
