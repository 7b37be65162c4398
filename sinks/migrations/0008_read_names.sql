-- 0008_read_names: each version's references also as plain names (namespace levels and name joined
-- by the unit separator, chr(31)) and catalogs, beside the structs. Following reads through views
-- (`uses`) then reads two lists of short strings per current version instead of every reference
-- in full. The store keeps them with `version_reads` (viewlineage.sinks.spans).
ALTER TABLE version_reads ADD COLUMN read_names VARCHAR[];
ALTER TABLE version_reads ADD COLUMN read_catalogs VARCHAR[];
UPDATE version_reads
SET read_names = [array_to_string(list_append(r.namespace, r.name), chr(31)) FOR r IN reads],
    read_catalogs = [r.catalog FOR r IN reads];
