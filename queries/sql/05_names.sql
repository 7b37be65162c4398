-- Names as they display: parts joined by `.`, a part that holds `.`, `"`, a backtick or `/` in
-- double quotes (`"` doubled), so that the view in directory `db/a.b` reads `db."a.b"`, not as view `b` of namespace
-- `db.a`. `queries/names.py` spells them the same way (`dotted`).

CREATE OR REPLACE MACRO quoted_part(part) AS
CASE WHEN regexp_matches(part, '[."`/]') THEN '"' || replace(part, '"', '""') || '"' ELSE part END;

-- dotted_name(catalog, parts): catalog (when not NULL), then the parts.
CREATE OR REPLACE MACRO dotted_name(catalog, parts) AS
concat_ws('.', quoted_part(catalog), array_to_string(list_transform(parts, lambda part: quoted_part(part)), '.'));

-- path_name(catalog, name_path): dotted_name of a name joined by chr(31) (`view_spans.name_path`);
-- the common unquoted name costs one replace.
CREATE OR REPLACE MACRO path_name(catalog, name_path) AS
CASE WHEN regexp_matches(name_path, '[."`/]') OR regexp_matches(catalog, '[."`/]')
     THEN dotted_name(catalog, string_split(name_path, chr(31)))
     ELSE concat_ws('.', catalog, replace(name_path, chr(31), '.')) END;

-- namespace_name(name_path): the namespace levels of a name joined by chr(31), dotted as above.
CREATE OR REPLACE MACRO namespace_name(name_path) AS
array_to_string(list_transform(string_split(name_path, chr(31))[:-2], lambda part: quoted_part(part)), '.');

-- metadata_directory(location): the directory of a view's or table's metadata file's `metadata/`
-- (its location without `/metadata/<file>`), which holds one name: as `view_spans.directory_hash`.
CREATE OR REPLACE MACRO metadata_directory(location) AS regexp_replace(location, '(/metadata)?/[^/]*$', '');

