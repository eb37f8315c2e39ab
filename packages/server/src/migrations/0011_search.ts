// Search (docs/search.md, CONTRACT §8.2): each record carries `search_vector`, the weighted tsvector of its
// structure's search fields, kept by a row trigger in the statement that writes the record (so every write path,
// group commits included, keeps it, and a created record is searchable when its create answers). What a structure
// searches lives in `search_configs` (written with the structure, search/SearchConfig.ts); `reindex_after` is the
// cursor of a background re-index after the fields or language changed (search/Reindexer.ts), NULL when done.
// `search_lexicon` holds every lexeme of each structure once, with a trigram index (pg_trgm), for typo tolerance:
// statement triggers add the words of written rows.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`
  yield* sql`CREATE TABLE search_configs (
    structure_id uuid PRIMARY KEY,
    language regconfig NOT NULL DEFAULT 'simple',
    fields jsonb NOT NULL DEFAULT '[]',
    reindex_after uuid,
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE search_lexicon (
    structure_id uuid NOT NULL,
    word text NOT NULL,
    PRIMARY KEY (structure_id, word)
  )`
  yield* sql`CREATE INDEX search_lexicon_trgm ON search_lexicon USING gin (word gin_trgm_ops)`
  yield* sql`ALTER TABLE records ADD COLUMN search_vector tsvector`
  // written directly, as records_data_gin (migration 0008): no pending list merged by one unlucky write
  yield* sql`CREATE INDEX records_search ON records USING gin (search_vector) WITH (fastupdate = off)`
  // fields: [{name, weight}] with weight the tsvector label A-D; text past 100,000 characters is not indexed
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_search_vector(sid uuid, doc jsonb) RETURNS tsvector
    LANGUAGE plpgsql STABLE AS $$
    DECLARE c record; f jsonb; t text; v tsvector := ''::tsvector;
    BEGIN
      IF sid IS NULL THEN RETURN NULL; END IF;
      SELECT language, fields INTO c FROM search_configs WHERE structure_id = sid;
      IF NOT FOUND THEN RETURN NULL; END IF;
      FOR f IN SELECT jsonb_array_elements(c.fields) LOOP
        IF jsonb_typeof(doc -> (f ->> 'name')) = 'string' THEN
          t := left(doc ->> (f ->> 'name'), 100000);
          IF t <> '' THEN v := v || setweight(to_tsvector(c.language, t), (f ->> 'weight')::"char"); END IF;
        END IF;
      END LOOP;
      RETURN v;
    END $$`)
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_records_search() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' OR NEW.data IS DISTINCT FROM OLD.data OR NEW.structure_id IS DISTINCT FROM OLD.structure_id THEN
        NEW.search_vector := troupe_search_vector(NEW.structure_id, NEW.data);
      END IF;
      RETURN NEW;
    END $$`)
  yield* sql`CREATE TRIGGER records_search BEFORE INSERT OR UPDATE OF data, structure_id ON records
    FOR EACH ROW EXECUTE FUNCTION troupe_records_search()`
  // words in a fixed order: two statements adding the same new words wait for each other, never in a cycle
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_search_lexicon_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO search_lexicon (structure_id, word)
        SELECT DISTINCT n.structure_id, w FROM written n, unnest(tsvector_to_array(n.search_vector)) AS w
        WHERE n.search_vector IS NOT NULL AND length(w) BETWEEN 3 AND 64 ORDER BY 1, 2
        ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $$`)
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_search_lexicon_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO search_lexicon (structure_id, word)
        SELECT DISTINCT n.structure_id, w FROM written n JOIN before o ON o.id = n.id,
          unnest(tsvector_to_array(n.search_vector)) AS w
        WHERE n.search_vector IS NOT NULL AND n.search_vector IS DISTINCT FROM o.search_vector
          AND length(w) BETWEEN 3 AND 64 ORDER BY 1, 2
        ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $$`)
  yield* sql`CREATE TRIGGER records_search_lexicon_insert AFTER INSERT ON records
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION troupe_search_lexicon_insert()`
  yield* sql`CREATE TRIGGER records_search_lexicon_update AFTER UPDATE ON records
    REFERENCING OLD TABLE AS before NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION troupe_search_lexicon_update()`
  // structures that exist already: the fallback of CONTRACT §8.2 (defaultSearchField, else every string property
  // that is not secret), weight 1 (D); their records are indexed by the re-indexer
  yield* sql`INSERT INTO search_configs (structure_id, language, fields, reindex_after)
    SELECT s.id, 'simple', coalesce(
      (SELECT jsonb_agg(jsonb_build_object('name', p ->> 'name', 'weight', 'D'))
        FROM jsonb_array_elements(s.definition -> 'properties') p
        WHERE p ->> 'type' = 'string' AND coalesce(p ->> 'isSecret', 'false') <> 'true'
          AND p ->> 'name' = s.definition ->> 'defaultSearchField'),
      (SELECT jsonb_agg(jsonb_build_object('name', p ->> 'name', 'weight', 'D'))
        FROM jsonb_array_elements(s.definition -> 'properties') p
        WHERE p ->> 'type' = 'string' AND coalesce(p ->> 'isSecret', 'false') <> 'true'),
      '[]'::jsonb), '00000000-0000-0000-0000-000000000000'
    FROM structures s WHERE jsonb_typeof(s.definition -> 'properties') = 'array'`
})
