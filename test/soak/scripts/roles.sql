-- make soak: load, replace or drop of a name another role may own
\set nt random(1, 2)
SET silvan.max_threads = :nt;
SELECT soak.roles();
