-- make soak: drop_model of a name that may not exist
\set nt random(1, 2)
SET silvan.max_threads = :nt;
SELECT soak.drop();
