-- 0016_recorded_settings: the settings a store's derived rows depend on, recorded as the roots
-- are (`index_roots`): the catalog map and aliases that name its views and the tables they read.
-- Every writer reuses them, so a run that leaves them out names nothing differently; a run that
-- gives others is refused, and only `reindex --change-catalogs` replaces them. A store made before
-- this migration records those of the first writer that opens it.
CREATE TABLE recorded_settings (
    name VARCHAR PRIMARY KEY,           -- 'catalog-map' | 'catalog-alias'
    entries VARCHAR[] NOT NULL          -- canonical entries, sorted: PREFIX=CATALOG, DIALECT:NAME=CATALOG
);
