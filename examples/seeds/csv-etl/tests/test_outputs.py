"""Verifier for csv-etl. Exits 0 only if every check passes."""
import json
import sys
import traceback

# test.sh runs python3 with -S (no site-packages, so no .pth or sitecustomize): add back the one directory
# these tests import from (jsonschema), the verifier image's own Debian packages.
sys.path.append("/usr/lib/python3/dist-packages")

OUT = "/app/out/"
expected = {}
failures = []


def check(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:1500]))
    if not cond:
        failures.append(name)


def main():
    expected.update(json.load(open("/tests/expected.json", encoding="utf-8")))
    # customers.jsonl ------------------------------------------------------------
    try:
        with open(OUT + "customers.jsonl", encoding="utf-8") as f:
            lines = [l for l in f.read().split("\n") if l.strip()]
        got = [json.loads(l) for l in lines]
    except Exception as e:
        check("customers.jsonl readable, one JSON object per line", False, repr(e))
        got = None
    if got is not None:
        want = expected["customers"]
        check("customers.jsonl record count", len(got) == len(want), "got %d want %d" % (len(got), len(want)))
        keys = ["email", "name", "phone", "country", "signup_date", "lifetime_value_cents", "sources"]
        check("every record has exactly the required keys",
              all(isinstance(g, dict) and sorted(g) == sorted(keys) for g in got))
        try:
            import jsonschema
            schema = json.load(open("/app/reference/customer.schema.json"))
            errs = []
            for g in got:
                try:
                    jsonschema.validate(g, schema)
                except jsonschema.ValidationError as e:
                    errs.append(e.message)
            check("every record validates against the schema", not errs, errs[:3])
        except ImportError as e:
            check("jsonschema available", False, repr(e))
        check("sorted by email", [g.get("email") for g in got if isinstance(g, dict)]
              == sorted(g.get("email") for g in got if isinstance(g, dict)))
        want_by_email = {w["email"]: w for w in want}
        got_by_email = {g.get("email"): g for g in got if isinstance(g, dict)}
        missing = sorted(set(want_by_email) - set(got_by_email))
        extra = sorted(set(got_by_email) - set(want_by_email), key=str)
        check("set of customers (emails)", not missing and not extra,
              "missing %s; unexpected %s" % (missing[:5], extra[:5]))
        for field in keys[1:]:
            bad = [(e, got_by_email[e].get(field), want_by_email[e][field])
                   for e in sorted(set(want_by_email) & set(got_by_email))
                   if got_by_email[e].get(field) != want_by_email[e][field]
                   or type(got_by_email[e].get(field)) is not type(want_by_email[e][field])]
            check("field %s correct for every customer" % field, not bad,
                  "%d wrong, e.g. %s" % (len(bad), bad[:3]))

    # rejects.csv -----------------------------------------------------------------
    try:
        with open(OUT + "rejects.csv", encoding="utf-8") as f:
            rl = [l.rstrip("\r") for l in f.read().split("\n") if l.strip()]
        check("rejects.csv header", rl[:1] == ["source,row_number,reason"], rl[:1])
        rows = [l.split(",") for l in rl[1:]]
        rows = [[a, int(b), c] for a, b, c in rows]
        want = expected["rejects"]
        check("rejects.csv rows", rows == want,
              "got %d rows, want %d; first difference: %s" % (
                  len(rows), len(want), next(((g, w) for g, w in zip(rows, want) if g != w), None)))
    except Exception as e:
        check("rejects.csv readable", False, repr(e))

    # summary.json ----------------------------------------------------------------
    try:
        with open(OUT + "summary.json") as f:
            summary = json.load(f)
        check("summary.json", summary == expected["summary"], "got %s want %s" % (summary, expected["summary"]))
    except Exception as e:
        check("summary.json readable", False, repr(e))


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        failures.append("verifier crashed")
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    sys.exit(1 if failures else 0)
