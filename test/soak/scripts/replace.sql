-- make soak: load_model(replace => true)
\set nt random(1, 2)
SET silvan.max_threads = :nt;
SELECT soak.replace();
