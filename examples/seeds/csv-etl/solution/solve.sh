#!/bin/bash
# Reference solution: decode -> validate -> normalize -> merge -> validate against schema -> write.
set -euo pipefail
mkdir -p /app/out
python3 - <<'PY'
import csv, json, re
from datetime import date, datetime
from decimal import Decimal
import jsonschema

SOURCES = [  # name, file, encoding, delimiter, date format, amount parser
    ("north", "crm_north.csv", "utf-8-sig", ",", "%Y-%m-%d"),
    ("south", "crm_south.csv", "iso-8859-1", ";", "%d.%m.%Y"),
    ("west", "crm_west.tsv", "utf-8", "\t", "%m/%d/%Y"),
]
DATE_RE = {"north": r"\d{4}-\d{2}-\d{2}", "south": r"\d{2}\.\d{2}\.\d{4}", "west": r"\d{2}/\d{2}/\d{4}"}
EMAIL_RE = re.compile(r"[a-z0-9._%+-]+@[a-z0-9-]+(\.[a-z0-9-]+)+")

countries, calling = {}, {}
with open("/app/reference/countries.csv", encoding="utf-8", newline="") as f:
    for row in csv.DictReader(f):
        for k in ("code", "name_en", "name_de"):
            countries[row[k].strip().lower()] = row["code"]
        calling[row["code"]] = row["calling_code"]

def amount_cents(src, txt):
    if src == "north" and re.fullmatch(r"\d+(\.\d{1,2})?", txt):
        return int(Decimal(txt) * 100)
    if src == "south" and re.fullmatch(r"(\d{1,3}(\.\d{3})+|\d+),\d{2}", txt):
        return int(Decimal(txt.replace(".", "").replace(",", ".")) * 100)
    if src == "west" and re.fullmatch(r"\d+", txt):
        return int(txt)
    return None

def parse_date(src, fmt, txt):
    if not re.fullmatch(DATE_RE[src], txt):
        return None
    try:
        d = datetime.strptime(txt, fmt).date()
    except ValueError:
        return None
    return d if date(2000, 1, 1) <= d <= date(2024, 6, 30) else None

def phone(txt, code):
    p = re.sub(r"[\s\-.()]", "", txt)
    if p.startswith("00"):
        p = "+" + p[2:]
    elif p.startswith("0"):
        p = "+" + calling[code] + p[1:]
    return p if re.fullmatch(r"\+[1-9][0-9]{6,14}", p) else None

read, rejects, rows = {}, [], []
for prio, (src, fname, enc, delim, fmt) in enumerate(SOURCES):
    with open("/app/incoming/" + fname, encoding=enc, newline="") as f:
        r = csv.reader(f, delimiter=delim, quoting=csv.QUOTE_NONE if delim == "\t" else csv.QUOTE_MINIMAL)
        next(r)
        n = 0
        for n, fields in enumerate(r, 1):
            rid, name, email, ph, country, dtxt, amt = [x.strip() for x in fields]
            email = email.lower()
            reason = None
            d = parse_date(src, fmt, dtxt)
            code = countries.get(country.lower())
            cents = amount_cents(src, amt)
            if not EMAIL_RE.fullmatch(email):
                reason = "invalid_email"
            elif d is None:
                reason = "invalid_date"
            elif code is None:
                reason = "unknown_country"
            elif cents is None:
                reason = "invalid_amount"
            if reason:
                rejects.append((src, n, reason))
                continue
            rows.append(dict(key=(prio, n), email=email, name=" ".join(name.split()), country=code,
                             phone=phone(ph, code), date=d, cents=cents, source="%s:%s" % (src, rid)))
        read[src] = n

merged = {}
for row in sorted(rows, key=lambda r: r["key"]):
    merged.setdefault(row["email"], []).append(row)
schema = json.load(open("/app/reference/customer.schema.json"))
customers = []
for email in sorted(merged):
    group = merged[email]
    rec = {
        "email": email,
        "name": group[0]["name"],
        "phone": next((g["phone"] for g in group if g["phone"]), None),
        "country": group[0]["country"],
        "signup_date": min(g["date"] for g in group).isoformat(),
        "lifetime_value_cents": sum(g["cents"] for g in group),
        "sources": sorted(g["source"] for g in group),
    }
    jsonschema.validate(rec, schema)
    customers.append(rec)

with open("/app/out/customers.jsonl", "w", encoding="utf-8") as f:
    for c in customers:
        f.write(json.dumps(c, ensure_ascii=False) + "\n")
with open("/app/out/rejects.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["source", "row_number", "reason"])
    w.writerows(sorted(rejects))
summary = {
    "rows_read": read,
    "rows_rejected": len(rejects),
    "customers": len(customers),
    "duplicates_merged": sum(read.values()) - len(rejects) - len(customers),
    "total_lifetime_value_cents": sum(c["lifetime_value_cents"] for c in customers),
}
with open("/app/out/summary.json", "w") as f:
    json.dump(summary, f, indent=2)
print(json.dumps(summary))
PY
