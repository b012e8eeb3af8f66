"""The allow-list for queries run on Spark: what a visitor may ask, and what is refused.

No Spark here: the check runs before any JVM. The columns are those of the demo ``trips``
table as Spark wrote its metadata (tests/data/metadata/spark), read through icecore as
``pipeline.query`` reads them. Every refused sample was parsed by sqlglot while writing this
test to make sure it reaches the node the check is meant to refuse (script transforms arrive
as ``QueryTransform``, unknown functions as ``Anonymous``, file sources as qualified tables).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

import icecore
from icecore.errors import NotFound
from icecore.table import Table
from pipeline.query_check import check_query, checked_query
from pipeline.spark import PipelineError

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "metadata" / "spark"


def golden_table(root: Path, name: str = "trips") -> Path:
    """A table folder (Hadoop layout) holding Spark's own metadata of the demo ``trips``."""
    folder = root / "wh" / "demo" / name
    (folder / "metadata").mkdir(parents=True)
    shutil.copy(GOLDEN / "trips-00024.metadata.json", folder / "metadata" / "v1.metadata.json")
    return folder


@pytest.fixture(scope="module")
def trips(tmp_path_factory: pytest.TempPathFactory) -> Table:
    return icecore.load_table(str(golden_table(tmp_path_factory.mktemp("check"))))


ACCEPTED = [
    "SELECT payment_type, count(*) AS n FROM rows GROUP BY payment_type ORDER BY 1",
    "SELECT vendor_id AS v, avg(fare), sum(fare) FILTER (WHERE fare > 0) FROM rows "
    "GROUP BY v HAVING count(*) > 3 ORDER BY v LIMIT 10",
    "SELECT vendor_id, fare, row_number() OVER (PARTITION BY vendor_id ORDER BY fare DESC) AS rn, "
    "sum(fare) OVER (ORDER BY pickup_ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM rows",
    "SELECT vendor_id, lag(fare) OVER w, lead(fare, 2) OVER w FROM rows "
    "WINDOW w AS (PARTITION BY vendor_id ORDER BY pickup_ts)",
    "WITH big AS (SELECT * FROM rows WHERE fare > 30), "
    "v AS (SELECT vendor_id, count(*) AS n FROM big GROUP BY vendor_id) "
    "SELECT * FROM v ORDER BY n DESC",
    "WITH x AS (SELECT 1 AS one FROM rows) SELECT one, (SELECT count(*) FROM x) FROM x",
    "SELECT a.vendor_id, count(*) FROM rows a JOIN rows b "
    "ON a.vendor_id = b.vendor_id AND a.pickup_ts < b.pickup_ts GROUP BY a.vendor_id",
    "SELECT r.vendor_id FROM rows r LEFT ANTI JOIN rows s USING (vendor_id)",
    "SELECT fare FROM rows r CROSS JOIN (SELECT max(fare) AS m FROM rows) x WHERE fare = x.m",
    "SELECT * FROM rows WHERE fare > (SELECT avg(fare) FROM rows) "
    "AND vendor_id IN (SELECT vendor_id FROM rows WHERE fare IS NOT NULL)",
    "SELECT r.* FROM rows r WHERE EXISTS "
    "(SELECT 1 FROM rows r2 WHERE r2.vendor_id = r.vendor_id AND r2.fare > r.fare)",
    "SELECT * FROM (SELECT vendor_id, count(*) AS n FROM rows GROUP BY vendor_id) q WHERE q.n > 1",
    "SELECT CASE WHEN fare > 50 THEN 'high' WHEN fare > 10 THEN 'mid' ELSE 'low' END AS band, "
    "count(*) FROM rows GROUP BY 1",
    "SELECT date_trunc('month', pickup_ts) AS m, year(pickup_ts), month(pickup_ts), "
    "dayofweek(pickup_ts), to_date(pickup_ts), date_format(pickup_ts, 'yyyy-MM'), "
    "datediff(current_date(), to_date(pickup_ts)) FROM rows",
    "SELECT pickup_ts - INTERVAL 1 DAY, date_add(to_date(pickup_ts), 3), "
    "extract(HOUR FROM pickup_ts), unix_timestamp(pickup_ts), last_day(pickup_ts) FROM rows",
    "SELECT CAST(fare AS DECIMAL(10, 2)), CAST(vendor_id AS STRING), TRY_CAST(payment_type AS INT) "
    "FROM rows",
    "SELECT coalesce(payment_type, 'none'), nvl(fare, 0), if(fare > 0, 'y', 'n'), "
    "nullif(vendor_id, 0) FROM rows",
    "SELECT upper(payment_type), concat(payment_type, '-', vendor_id), substr(payment_type, 1, 2), "
    "length(payment_type), regexp_extract(payment_type, '([a-z]+)', 1) FROM rows",
    "SELECT round(fare, 1), floor(fare), abs(fare), fare * 2 + 1, fare % 2, power(fare, 2) "
    "FROM rows",
    "SELECT count(DISTINCT vendor_id), approx_count_distinct(payment_type), "
    "percentile_approx(fare, 0.5), stddev(fare), collect_set(vendor_id) FROM rows",
    "SELECT size(tags), tags[0], array_contains(tags, 'x'), transform(tags, t -> upper(t)), "
    "filter(tags, t -> t <> ''), pickup_loc.lat, pickup_loc.lon FROM rows",
    "SELECT vendor_id, t FROM rows LATERAL VIEW explode(tags) e AS t",
    "SELECT vendor_id FROM rows UNION ALL SELECT vendor_id FROM rows",
    "SELECT vendor_id, count(*) FROM rows GROUP BY ROLLUP (vendor_id)",
    "select Vendor_ID, COUNT(*) from ROWS group by VENDOR_ID",
    "SELECT `vendor_id`, `fare` FROM `rows`",
    "SELECT fare BETWEEN 1 AND 2, payment_type LIKE 'C%', payment_type RLIKE '^c' FROM rows",
    "WITH rows AS (SELECT fare AS f FROM rows) SELECT f FROM rows",
    "SELECT /* a comment */ vendor_id FROM rows -- and another",
]


@pytest.mark.parametrize("sql", ACCEPTED)
def test_a_realistic_read_only_query_is_accepted(trips: Table, sql: str) -> None:
    checked = checked_query(sql, trips, None)
    # What runs is the checked tree written back: the same query for sqlglot, no comments.
    again = sqlglot.parse_one(checked, read="spark")
    assert again == sqlglot.parse_one(sql, read="spark")
    assert "/*" not in checked and "--" not in checked


TRANSFORM = "SELECT TRANSFORM(vendor_id) USING 'touch /tmp/x' FROM rows"
SCRIPT = "script transform"
ONLY_ROWS = "may read only `rows`"
NOT_A_COLUMN = "neither a column of the table"

REFUSED = [
    # Script transforms, every spelling.
    (TRANSFORM, SCRIPT),
    ("select transform(vendor_id) using 'id' as (a) from rows", SCRIPT),
    ("SELECT\n  TRANSFORM ( vendor_id )\n  USING\n 'id' -- x\n FROM rows", SCRIPT),
    ("SELECT TRANSFORM(vendor_id) /* hi */ USING 'id' FROM rows", SCRIPT),
    (
        "SELECT TRANSFORM(vendor_id, fare) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' "
        "USING 'cat' AS (x, y) FROM rows",
        SCRIPT,
    ),
    ("FROM rows SELECT TRANSFORM(vendor_id) USING 'id'", SCRIPT),
    ("FROM rows MAP vendor_id USING 'id'", "does not parse"),
    ("FROM rows REDUCE vendor_id USING 'id'", "does not parse"),
    ("SELECT * FROM (SELECT TRANSFORM(vendor_id) USING 'id' FROM rows)", SCRIPT),
    ("WITH x AS (SELECT TRANSFORM(vendor_id) USING 'id' FROM rows) SELECT * FROM x", SCRIPT),
    ("SELECT vendor_id FROM rows WHERE EXISTS (SELECT TRANSFORM(fare) USING 'id')", SCRIPT),
    # Reflection and friends, any case or quoting, nested anywhere.
    ("SELECT reflect('java.lang.System', 'getenv', 'HOME')", "function reflect"),
    ("SELECT REFLECT('a', 'b') FROM rows", "function reflect"),
    ("SELECT `reflect`('a', 'b') FROM rows", "function reflect"),
    ("SELECT try_reflect('a', 'b') FROM rows", "function try_reflect"),
    ("SELECT java_method('a', 'b') FROM rows", "function java_method"),
    ("SELECT system.builtin.reflect('a', 'b') FROM rows", "qualified name"),
    ("SELECT CASE WHEN fare > 0 THEN java_method('a', 'b') END FROM rows", "java_method"),
    ("SELECT sum(fare) OVER (PARTITION BY reflect('a', 'b')) FROM rows", "function reflect"),
    ("SELECT transform(tags, t -> reflect('a', t)) FROM rows", "function reflect"),
    ("WITH x AS (SELECT reflect('a', 'b') AS r FROM rows) SELECT r FROM x", "function reflect"),
    ("SELECT myudf(fare) FROM rows", "function myudf"),
    # Where the data lives, and who runs the server.
    ("SELECT input_file_name() FROM rows", "input_file_name"),
    ("SELECT input_file_block_start() FROM rows", "input_file_block_start"),
    ("SELECT input_file_block_length() FROM rows", "input_file_block_length"),
    ("SELECT current_user()", "current_user"),
    ("SELECT current_user", "current_user"),
    ("SELECT session_user()", "session_user"),
    ("SELECT user()", "function user"),
    ("SELECT current_catalog()", "current_catalog"),
    ("SELECT version()", "function version"),
    # Hints.
    ("SELECT /*+ REPARTITION(3) */ * FROM rows", "query hint"),
    ("SELECT /*+ BROADCAST(r) */ r.fare FROM rows r JOIN rows s ON r.trip_id = s.trip_id", "hint"),
    # Files, other tables, table-valued functions.
    ("SELECT * FROM parquet.`/etc/passwd`", ONLY_ROWS),
    ("SELECT * FROM text.`/etc/passwd`", ONLY_ROWS),
    ("SELECT * FROM `parquet`.`/x`", ONLY_ROWS),
    ("SELECT * FROM rows WHERE vendor_id IN (SELECT vendor_id FROM json.`/x`)", ONLY_ROWS),
    ("SELECT * FROM read_files('/etc')", "table-valued function read_files"),
    ("SELECT * FROM range(10)", "table-valued function range"),
    ("SELECT * FROM rows, range(10)", "table-valued function range"),
    ("SELECT * FROM IDENTIFIER('other')", "table-valued function"),
    ("SELECT * FROM icecore.demo.trips", ONLY_ROWS),
    ("SELECT * FROM db.rows", ONLY_ROWS),
    ("SELECT * FROM global_temp.rows", ONLY_ROWS),
    ("SELECT * FROM `rows`.`x`", ONLY_ROWS),
    ("SELECT * FROM rows JOIN zones ON true", ONLY_ROWS),
    # CTE names out of their scope read a real table of that name.
    ("SELECT * FROM (WITH x AS (SELECT 1 AS a FROM rows) SELECT * FROM x) q, x", ONLY_ROWS),
    ("WITH x AS (SELECT * FROM x) SELECT * FROM x", ONLY_ROWS),
    ("WITH a AS (SELECT * FROM b), b AS (SELECT * FROM rows) SELECT * FROM a", ONLY_ROWS),
    (
        "SELECT (WITH x AS (SELECT 1 AS a FROM rows) SELECT count(*) FROM x), "
        "(SELECT count(*) FROM x) FROM rows",
        ONLY_ROWS,
    ),
    # Metadata columns, wherever they hide.
    ("SELECT _file FROM rows", NOT_A_COLUMN),
    ("SELECT `_file` FROM rows", NOT_A_COLUMN),
    ("SELECT _FILE FROM rows", NOT_A_COLUMN),
    ("SELECT r._pos FROM rows r", NOT_A_COLUMN),
    ("SELECT rows._spec_id FROM rows", NOT_A_COLUMN),
    ("SELECT count(*) FROM rows GROUP BY _partition", NOT_A_COLUMN),
    ("SELECT vendor_id FROM rows WHERE _deleted", NOT_A_COLUMN),
    ("SELECT _row_id, _last_updated_sequence_number FROM rows", NOT_A_COLUMN),
    ("SELECT _change_type, _change_ordinal, _commit_snapshot_id FROM rows", NOT_A_COLUMN),
    ("SELECT vendor_id FROM rows ORDER BY _pos", NOT_A_COLUMN),
    ("SELECT max(fare) OVER (ORDER BY _pos) FROM rows", NOT_A_COLUMN),
    ("SELECT CASE WHEN _pos > 0 THEN 1 END FROM rows", NOT_A_COLUMN),
    ("SELECT * FROM (SELECT * FROM rows) q WHERE q._file LIKE '%'", NOT_A_COLUMN),
    ("WITH t AS (SELECT fare AS _file FROM rows) SELECT _file FROM rows", NOT_A_COLUMN),
    ("SELECT _metadata FROM rows", NOT_A_COLUMN),
    # Statements that are not a SELECT.
    ("SET spark.sql.caseSensitive=true", "not SET"),
    ("ADD JAR /tmp/x.jar", "not ADD JAR"),
    ("CREATE TABLE x AS SELECT * FROM rows", "not CREATE"),
    ("INSERT INTO rows VALUES (1)", "not INSERT"),
    ("CACHE TABLE rows", "not CACHE"),
    ("DESCRIBE rows", "not DESCRIBE"),
    ("EXPLAIN SELECT * FROM rows", "not EXPLAIN"),
    ("VALUES (1)", "not VALUES"),
    ("SELECT 1; SELECT 2", "exactly one"),
    (f"{TRANSFORM}; SELECT 1", "exactly one"),
    ("SELECT FROM WHERE", "does not parse"),
    # Everything else that is not on the list.
    ("SELECT * FROM rows LATERAL VIEW json_tuple(payment_type, 'a') t AS c", "LATERAL"),
    ("SELECT * FROM rows LATERAL VIEW reflect('a', 'b') t AS c", "LATERAL"),
    ("SELECT * FROM rows TABLESAMPLE (10 PERCENT)", "SAMPLE"),
    ("SELECT * FROM rows VERSION AS OF 1", "VERSION"),
    ("SELECT * FROM rows PIVOT (count(*) FOR vendor_id IN (1, 2))", "PIVOT"),
    ("SELECT * FROM VALUES (1, 2) AS t(a, b)", "VALUES"),
    ("SELECT rand(), uuid()", "function rand"),
    ("SELECT CAST(fare AS INTERVAL DAY) FROM rows", "cast to INTERVAL"),
    ("SELECT from_json(payment_type, 'a INT') FROM rows", "function from_json"),
    ("SELECT * FROM rows CLUSTER BY vendor_id", "CLUSTER"),
    ("SELECT ?", "placeholder"),
    # Spark fills ${...} from its settings and the environment, inside literals too.
    ("SELECT '${env:HOME}' FROM rows", "variable substitution"),
    ("SELECT 1 FROM rows WHERE payment_type = '${system:user.name}'", "variable substitution"),
]


@pytest.mark.parametrize(("sql", "says"), REFUSED)
def test_anything_off_the_list_is_refused_in_one_sentence(
    trips: Table, sql: str, says: str
) -> None:
    with pytest.raises(PipelineError) as caught:
        checked_query(sql, trips, None)
    sentence = str(caught.value)
    assert says in sentence
    assert "\n" not in sentence and sentence.endswith(".")


def test_a_dollar_and_a_brace_apart_are_only_text(trips: Table) -> None:
    checked = checked_query("SELECT concat('$', '{spark.app.name}') FROM rows", trips, None)
    assert "${" not in checked


def test_a_query_longer_than_the_bound_is_refused_before_parsing(trips: Table) -> None:
    sql = "SELECT " + " + ".join(["fare"] * 5000) + " FROM rows"
    with pytest.raises(PipelineError, match="characters long"):
        checked_query(sql, trips, None)


def test_columns_resolve_against_the_snapshots_schema(trips: Table) -> None:
    # congestion_fee was added by a later schema (Spark's own history of the demo story).
    metadata = trips.metadata
    first = min(metadata.snapshots, key=lambda s: s.sequence_number)
    assert first.schema_id is not None
    old = metadata.schema_by_id(first.schema_id)
    assert old is not None and "congestion_fee" not in {f.name for f in old.fields}
    sql = "SELECT sum(congestion_fee) FROM rows"
    assert checked_query(sql, trips, None)
    with pytest.raises(PipelineError, match="congestion_fee"):
        checked_query(sql, trips, first.snapshot_id)


def test_an_unknown_snapshot_is_refused(trips: Table) -> None:
    with pytest.raises(NotFound, match="12345"):
        checked_query("SELECT 1 FROM rows", trips, 12345)


def test_names_resolve_against_the_columns_given() -> None:
    columns = {"vendor_id": exp.DataType.build("INT")}
    assert check_query("SELECT vendor_id FROM rows", columns) == "SELECT vendor_id FROM rows"
    with pytest.raises(PipelineError, match="`fare`"):
        check_query("SELECT fare FROM rows", columns)
    with pytest.raises(PipelineError, match="could not be checked"):
        check_query("SELECT fare FROM rows", {})  # no columns known: refused, never let through
