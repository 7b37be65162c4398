-- 0013_installed_queries: a digest of the query views and macros a writer last installed
-- (`queries/sql/*.sql`). A writer that brings the same ones leaves them in place: installing them
-- cost ~50-90 ms every time a writer opened the store (each `index` run, say).
CREATE TABLE _installed_queries (
    digest VARCHAR NOT NULL             -- blake2b-128 of the SQL files, in the order they run
);
