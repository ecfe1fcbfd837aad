#!/usr/bin/python3
"""Load and score a model from Python with psycopg, as the README shows.

Runs against the server of PGHOST/PGPORT (test/run.sh starts one): loads
test/fixtures/named_features.json with the README's snippet, scores a
table whose columns are named like the model's features (in another
order) and compares every prediction with XGBoost's own (the fixture's
expected.csv).  Prints "N passed, N failed".
"""
import csv
import math
import os
import struct
import sys

import psycopg

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
passed = failed = 0


def check(ok, what):
    """Count one check, reporting a failure."""
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("check failed: " + what, file=sys.stderr)


def as_float32(x):
    """x rounded to float32, as XGBoost's outputs are."""
    return struct.unpack("f", struct.pack("f", x))[0]


def main():
    names = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
    with open(os.path.join(FIXTURES, "named_features.input.csv")) as f:
        rows = [[float(v) for v in line] for line in csv.reader(f)]
    with open(os.path.join(FIXTURES, "named_features.expected.csv")) as f:
        expected = [float(r["predict"]) for r in csv.DictReader(f)]
    with psycopg.connect(dbname=os.environ.get("PGDATABASE", "postgres"), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS silvan")
        # the README's snippet
        with open(os.path.join(FIXTURES, "named_features.json")) as f:
            conn.execute("SELECT silvan.load_model(%s, %s, replace => true)", ("py_named", f.read()))
        got = conn.execute("SELECT feature_names FROM silvan.models WHERE name = 'py_named'").fetchone()
        check(got is not None and got[0] == names, "feature names %r" % (got,))
        order = list(reversed(names))
        conn.execute("DROP TABLE IF EXISTS py_rows")
        conn.execute("CREATE TABLE py_rows (id bigint, %s)" % ", ".join("%s real" % n for n in order))
        with conn.cursor().copy("COPY py_rows (id, %s) FROM STDIN" % ", ".join(order)) as copy:
            for i, row in enumerate(rows, 1):
                by_name = dict(zip(names, row))
                copy.write_row([i] + [None if math.isnan(by_name[n]) else by_name[n] for n in order])
        result = dict(conn.execute(
            "SELECT key, prediction FROM silvan.predict_table('py_named', 'py_rows', 'id')").fetchall())
        check(len(result) == len(rows), "%d results for %d rows" % (len(result), len(rows)))
        for i, want in enumerate(expected, 1):
            check(i in result and as_float32(result[i]) == as_float32(want),
                  "row %d: %r, XGBoost %r" % (i, result.get(i), want))
        one = conn.execute("SELECT silvan.predict('py_named', %s::real[])", (rows[0],)).fetchone()[0]
        check(as_float32(one) == as_float32(expected[0]), "scalar predict %r vs %r" % (one, expected[0]))
        conn.execute("DROP TABLE py_rows")
        conn.execute("SELECT silvan.drop_model('py_named')")
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
