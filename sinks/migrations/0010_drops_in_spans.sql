-- 0010_drops_in_spans: a span also says when its file in force was removed. A view whose file in
-- force at t was removed by t is dropped at t; every question about all views at t asked that of
-- `removals` per span, and the lookup read each span's location (unique strings, the costliest
-- column to decompress): at 10^6 versions, 35 of the 42 ms that finding the views current at t took.
-- The store fills it from the rows already there when it applies this migration
-- (viewlineage.sinks.spans), and re-derives a view's spans when a removal of one of its files arrives.
ALTER TABLE view_spans ADD COLUMN dropped_ms BIGINT;  -- the earliest removal of `location`, epoch ms; NULL if none
