-- The analysts' catalog: views only, over the warehouse's immutable Parquet files.
-- A table's rows are visible once its record exists (records are written last), so no partial result shows.
-- The globs are re-read at every query: new results appear without reopening the catalog.

CREATE VIEW judgment_sets AS
SELECT * FROM read_parquet({judgment_sets}, union_by_name = true);

-- A judgment names its assessor where its set names them: several assessors' grades of one (query, document) are
-- several rows. A set that names none has no `assessor` column in its files: it reads NULL there, even when no file
-- of the warehouse has the column yet (the empty typed row gives it).
CREATE VIEW judgments AS
SELECT j.judgment_set_id, j.query_id, j.iteration, j.doc_id, j.relevance, j.assessor, j.source_line, j.bucket
FROM (
    SELECT * FROM read_parquet({judgments}, union_by_name = true)
    UNION ALL BY NAME SELECT NULL::VARCHAR AS assessor WHERE false
) AS j
SEMI JOIN judgment_sets USING (judgment_set_id);

-- The assessors a set names, with their declared kind and what they judged, and how far each pair of them agrees
-- (Cohen's kappa plain, linearly weighted and on relevant-or-not; Krippendorff's alpha over all of them, the same
-- on each row of a set): computed when the set was stored, visible with its record. A set that names no assessor
-- has no row in either. `judged agreement` prints the same.
CREATE VIEW assessors AS
SELECT a.* FROM read_parquet({assessors}, union_by_name = true) AS a
SEMI JOIN judgment_sets USING (judgment_set_id);

CREATE VIEW assessor_agreement AS
SELECT g.* FROM read_parquet({assessor_agreement}, union_by_name = true) AS g
SEMI JOIN judgment_sets USING (judgment_set_id);

-- A run stored before layouts has no `layout`: its shards are cut by bucket, and it reads so, even when no file of the
-- warehouse has the column yet (the empty typed row gives it).
CREATE VIEW runs AS
SELECT * REPLACE (coalesce(layout, 'bucket') AS layout)
FROM (
    SELECT * FROM read_parquet({runs}, union_by_name = true)
    UNION ALL BY NAME SELECT NULL::VARCHAR AS layout WHERE false
);

CREATE VIEW run_rows AS
SELECT r.* FROM read_parquet({run_rows}, union_by_name = true) AS r
SEMI JOIN runs USING (run_id);

-- A record stored before the method had a version has no `method_version`: it reads as the version of such records
-- (schemas/provenance.py METHOD_VERSION_UNRECORDED), even when no file of the warehouse has the column yet (the
-- empty typed row gives it).
CREATE VIEW evaluations AS
SELECT * REPLACE (coalesce(method_version, {method_version_unrecorded}) AS method_version)
FROM (
    SELECT * FROM read_parquet({evaluations}, union_by_name = true)
    UNION ALL BY NAME SELECT NULL::VARCHAR AS method_version WHERE false
);

-- A result an analyst joins carries its judgment set's version label (`judgment_version`) beside its id: results on
-- two versions of one judgment set are told apart in any query's output.
CREATE VIEW per_query AS
SELECT p.*, js.version AS judgment_version FROM read_parquet({per_query}, union_by_name = true) AS p
LEFT JOIN judgment_sets AS js ON js.judgment_set_id = p.judgment_set_id
SEMI JOIN evaluations USING (evaluation_id);

CREATE VIEW summary AS
SELECT s.*, js.version AS judgment_version FROM read_parquet({summary}, union_by_name = true) AS s
LEFT JOIN judgment_sets AS js ON js.judgment_set_id = s.judgment_set_id
SEMI JOIN evaluations USING (evaluation_id);

CREATE VIEW nightly AS
SELECT * FROM read_parquet({nightly}, union_by_name = true);

-- Comparisons of runs on one judgment basis: one record per comparison (evaluations, settings, provenance), its
-- statistics per pair (baseline, run) x measure x cutoff, and its per-query differences.
CREATE VIEW comparison_records AS
SELECT * FROM read_parquet({comparison_records}, union_by_name = true);

CREATE VIEW comparisons AS
SELECT c.*, js.version AS judgment_version FROM read_parquet({comparisons}, union_by_name = true) AS c
LEFT JOIN judgment_sets AS js ON js.judgment_set_id = c.judgment_set_id
SEMI JOIN comparison_records USING (comparison_id);

CREATE VIEW comparison_per_query AS
SELECT q.* FROM read_parquet({comparison_per_query}, union_by_name = true) AS q
SEMI JOIN comparison_records USING (comparison_id);

-- Judgment versions made by extending another (judged ingest-judgments --extends): parent, pairs added and
-- revised, who judged, when, and the worklist they answered. Visible once the new version's record exists.
CREATE VIEW judgment_lineage AS
SELECT l.* FROM read_parquet({judgment_lineage}, union_by_name = true) AS l
SEMI JOIN judgment_sets USING (judgment_set_id);

-- Judging worklists (judged worklist): the unjudged pairs to judge next, best first, with why.
CREATE VIEW worklists AS
SELECT * FROM read_parquet({worklists}, union_by_name = true);

-- Each row of each evaluated run with its grade under each judgment set it was evaluated against: relevance is
-- NULL when the document is unjudged (or its judgment unresolved). `rank` is trec_eval's order (score descending,
-- then doc_id descending by byte order): the stored `position`, in which ingest wrote the rows, not ranked again.
-- A set that names several assessors gives a document their consensus, the lower median of the grades given (the
-- assessor model `median`, transforms/assessors.py), so a run row stays one row.
CREATE VIEW judged_run_rows AS
WITH evaluated_pairs AS (SELECT DISTINCT run_id, judgment_set_id FROM evaluations)
SELECT
    pair.judgment_set_id,
    js.version AS judgment_version,
    r.run_id,
    r.query_id,
    r.doc_id,
    r.score,
    r.source_rank,
    r.position AS rank,
    j.relevance,
    j.relevance IS NOT NULL AS judged
FROM evaluated_pairs AS pair
JOIN run_rows AS r USING (run_id)
LEFT JOIN judgment_sets AS js ON js.judgment_set_id = pair.judgment_set_id
LEFT JOIN (
    SELECT judgment_set_id, query_id, doc_id, relevance FROM judgments WHERE assessor IS NULL
    UNION ALL
    SELECT judgment_set_id, query_id, doc_id, quantile_disc(relevance, 0.5) AS relevance
    FROM judgments WHERE assessor IS NOT NULL GROUP BY judgment_set_id, query_id, doc_id
) AS j
    ON j.judgment_set_id = pair.judgment_set_id AND j.query_id = r.query_id AND j.doc_id = r.doc_id;

-- The newest version of each judgment set name: the one ingested last, as `judged nightly` and `--extends NAME`
-- take it (ties, never seen in practice, go to the larger id). The results on it: filter any other view with
-- `WHERE judgment_set_id IN (SELECT judgment_set_id FROM latest_judgment_sets)`.
CREATE VIEW latest_judgment_sets AS
SELECT * FROM judgment_sets
QUALIFY row_number() OVER (PARTITION BY name ORDER BY ingested_at DESC, judgment_set_id DESC) = 1;

CREATE VIEW latest_summary AS
SELECT * FROM summary WHERE judgment_set_id IN (SELECT judgment_set_id FROM latest_judgment_sets);

CREATE VIEW latest_per_query AS
SELECT * FROM per_query WHERE judgment_set_id IN (SELECT judgment_set_id FROM latest_judgment_sets);
