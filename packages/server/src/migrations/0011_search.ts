// Search (docs/search.md, CONTRACT §8.2): each record carries `search_vector`, the weighted tsvector of its
// structure's search fields, kept by a row trigger in the statement that writes the record (so every write path,
// group commits included, keeps it, and a created record is searchable when its create answers). What a structure
// searches lives in `search_configs` (written with the structure, search/SearchConfig.ts); `reindex_after` is the
// cursor of a background re-index after the fields or language changed (search/Reindexer.ts), NULL when done.
// `search_lexicon` holds every lexeme of each structure once, with a trigram index (pg_trgm), for typo tolerance.
// It is filled off the write path: by the outbox relay from the records its events name (search/Lexicon.ts) and by
// the re-indexer, so a write pays for its vector but not for the trigram index of its new words.
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
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_search_vector_of(lang regconfig, fields jsonb, doc jsonb) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE AS $$
    DECLARE f jsonb; t text; v tsvector := ''::tsvector;
    BEGIN
      FOR f IN SELECT jsonb_array_elements(fields) LOOP
        IF jsonb_typeof(doc -> (f ->> 'name')) = 'string' THEN
          t := left(doc ->> (f ->> 'name'), 100000);
          IF t <> '' THEN v := v || setweight(to_tsvector(lang, t), (f ->> 'weight')::"char"); END IF;
        END IF;
      END LOOP;
      RETURN v;
    END $$`)
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_search_vector(sid uuid, doc jsonb) RETURNS tsvector
    LANGUAGE sql STABLE AS $$
      SELECT troupe_search_vector_of(c.language, c.fields, doc) FROM search_configs c WHERE c.structure_id = sid
    $$`)
  // An update that leaves every search field as it was keeps its vector: a PATCH of a number or a flag costs no
  // to_tsvector (the vector of a structure whose fields changed is brought up to date by the re-indexer).
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_records_search() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE c record; f jsonb;
    BEGIN
      IF TG_OP = 'UPDATE' AND NEW.data IS NOT DISTINCT FROM OLD.data AND NEW.structure_id IS NOT DISTINCT FROM OLD.structure_id THEN
        RETURN NEW;
      END IF;
      SELECT language, fields INTO c FROM search_configs WHERE structure_id = NEW.structure_id;
      IF NOT FOUND THEN NEW.search_vector := NULL; RETURN NEW; END IF;
      IF TG_OP = 'UPDATE' AND NEW.structure_id = OLD.structure_id THEN
        FOR f IN SELECT jsonb_array_elements(c.fields) LOOP
          IF NEW.data -> (f ->> 'name') IS DISTINCT FROM OLD.data -> (f ->> 'name') THEN
            NEW.search_vector := troupe_search_vector_of(c.language, c.fields, NEW.data);
            RETURN NEW;
          END IF;
        END LOOP;
        RETURN NEW;
      END IF;
      NEW.search_vector := troupe_search_vector_of(c.language, c.fields, NEW.data);
      RETURN NEW;
    END $$`)
  yield* sql`CREATE TRIGGER records_search BEFORE INSERT OR UPDATE OF data, structure_id ON records
    FOR EACH ROW EXECUTE FUNCTION troupe_records_search()`
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
