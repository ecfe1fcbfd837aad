-- make soak: load_model of a name that may exist
\set nt random(1, 2)
SET silvan.max_threads = :nt;
SELECT soak.load();
