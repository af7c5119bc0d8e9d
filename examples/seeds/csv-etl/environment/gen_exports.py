"""Generate three messy regional CRM exports (deterministic).

Usage: gen_exports.py OUT_DIR [--truth TRUTH_JSON]
The --truth file (canonical merged customers, rejects, summary) is only for authoring
the verifier; it is never written inside the task image.
"""
import csv
import io
import json
import os
import random
import sys
import unicodedata
from datetime import date, timedelta

out = sys.argv[1]
truth_path = sys.argv[sys.argv.index("--truth") + 1] if "--truth" in sys.argv else None
rng = random.Random(777)

COUNTRIES = [  # code, english, german, calling code
    ("DE", "Germany", "Deutschland", "49"), ("AT", "Austria", "Österreich", "43"),
    ("CH", "Switzerland", "Schweiz", "41"), ("FR", "France", "Frankreich", "33"),
    ("ES", "Spain", "Spanien", "34"), ("NL", "Netherlands", "Niederlande", "31"),
    ("PT", "Portugal", "Portugal", "351"), ("GB", "United Kingdom", "Vereinigtes Königreich", "44"),
    ("US", "United States", "Vereinigte Staaten", "1"), ("SE", "Sweden", "Schweden", "46"),
]
FIRST = ["José", "Müller", "Anaïs", "Björn", "Zoë", "Ñuria", "Søren", "Émile", "Ingrid", "Lars",
         "María", "Jürgen", "Chloé", "Åsa", "Noël", "Tomás", "Hélène", "Kai", "Mia", "Oskar",
         "Paula", "Rui", "Sofia", "Theo", "Ute", "Vera", "Wim", "Yusuf", "Lena", "Felix"]
LAST = ["García", "Schröder", "Dubois", "Lindström", "van Dijk", "Pereira", "O'Brien", "Núñez",
        "Weiß", "Jansen", "Costa", "Moreau", "Svensson", "Fischer", "Santos", "Smith", "Bauer",
        "Lefèvre", "Ødegaard", "Martín", "Keller", "de Vries", "Brown", "Hofmann"]
DOMAINS = ["example.com", "mail.example.org", "example.net", "corp.example.de", "post.example.es"]
END = date(2024, 6, 30)

# ---- canonical people ---------------------------------------------------------------
people = []
used = set()
for i in range(330):
    fn, ln = rng.choice(FIRST), rng.choice(LAST)
    local = "%s.%s" % (fn, ln)
    local = unicodedata.normalize("NFKD", local.lower().replace("ø", "o").replace("ß", "ss"))
    local = local.replace(" ", "").replace("'", "").encode("ascii", "ignore").decode()
    email = "%s%d@%s" % (local, rng.randint(1, 999), rng.choice(DOMAINS))
    if email in used:
        continue
    used.add(email)
    c = rng.choice(COUNTRIES)
    national = "%d%s" % (rng.randint(1, 9), "".join(str(rng.randint(0, 9)) for _ in range(rng.randint(7, 9))))
    has_phone = rng.random() > 0.12
    people.append(dict(email=email, name="%s %s" % (fn, ln), country=c, national=national if has_phone else None))


def phone_render(p):
    """A messy but valid rendering of the person's phone number."""
    if p["national"] is None:
        return rng.choice(["", "n/a", "-"])
    n, cc = p["national"], p["country"][3]
    style = rng.randint(0, 4)
    if style == 0:
        return "+%s %s %s" % (cc, n[:3], n[3:])
    if style == 1:
        return "00%s-%s-%s" % (cc, n[:2], n[2:])
    if style == 2:
        return "0%s %s" % (n[:3], n[3:])
    if style == 3:
        return "(0%s) %s %s" % (n[:2], n[2:5], n[5:])
    return "+%s.%s.%s" % (cc, n[:4], n[4:])


def email_render(e):
    r = rng.random()
    if r < 0.2:
        return e.upper()
    if r < 0.35:
        return "  %s " % e.capitalize()
    return e


def name_render(n):
    return rng.choice([n, n, n, " " + n, n.replace(" ", "  "), n + " "])


def rand_date():
    return date(2015, 1, 1) + timedelta(days=rng.randint(0, (END - date(2015, 1, 1)).days))


# which sources each person appears in
SOURCES = ["north", "south", "west"]
rows = {s: [] for s in SOURCES}
truth = {}
for p in people:
    r = rng.random()
    if r < 0.72:
        srcs = [rng.choice(SOURCES)]
    elif r < 0.9:
        srcs = rng.sample(SOURCES, 2)
    elif r < 0.96:
        srcs = list(SOURCES)
    else:
        s = rng.choice(SOURCES)
        srcs = [s, s]  # exported twice from the same system
    srcs.sort(key=SOURCES.index)
    recs = []
    for k, s in enumerate(srcs):
        rec = dict(person=p, source=s, signup=rand_date(), cents=rng.randint(0, 2500000))
        if k > 0 and rng.random() < 0.3:  # lower-priority systems may hold a stale name
            rec["name_override"] = p["name"].split(" ")[0][0] + ". " + p["name"].split(" ", 1)[1]
        if k > 0 and rng.random() < 0.2 and p["national"] is not None:  # ...or no phone
            rec["no_phone"] = True
        recs.append(rec)
        rows[s].append(rec)
    truth[p["email"]] = recs

# ---- rows that must be rejected -------------------------------------------------------
BAD = []
for s in SOURCES:
    for kind in ["invalid_email", "invalid_email", "invalid_date", "unknown_country", "invalid_amount",
                 "invalid_date", "invalid_email"]:
        p = dict(email="reject%d.%s@example.com" % (len(BAD), s), name="Broken Row", country=rng.choice(COUNTRIES),
                 national="301234567")
        rec = dict(person=p, source=s, signup=rand_date(), cents=rng.randint(100, 9999), bad=kind)
        BAD.append(rec)
        rows[s].insert(rng.randint(0, len(rows[s])), rec)

for s in SOURCES:
    rng.shuffle(rows[s])

os.makedirs(out, exist_ok=True)
ids = {"north": 1000, "south": 5000, "west": 9000}
rejects = []


def render(rec, s, row_no):
    p = rec["person"]
    bad = rec.get("bad")
    email = email_render(p["email"])
    if bad == "invalid_email":
        email = rng.choice([p["email"].replace("@", " at "), p["email"].split("@")[0] + "@localhost",
                            "", p["email"].replace("@", "@@")])
    name = name_render(rec.get("name_override", p["name"]))
    phone = "" if rec.get("no_phone") else phone_render(p)
    code, en, de, _ = p["country"]
    d, cents = rec["signup"], rec["cents"]
    if s == "north":
        country = rng.choice([code, en, en.upper(), code.lower()])
        dtxt = d.isoformat()
        amount = "%d.%02d" % divmod(cents, 100)
        if bad == "invalid_date":
            dtxt = rng.choice(["2023-02-30", "2025-01-15", "15/03/2021", ""])
        if bad == "invalid_amount":
            amount = rng.choice(["", "n/a", "-12.50", "12,50"])
    elif s == "south":
        country = rng.choice([de, de, code, de.upper()])
        dtxt = d.strftime("%d.%m.%Y")
        eur, ct = divmod(cents, 100)
        amount = "{:,}".format(eur).replace(",", ".") + ",%02d" % ct
        if bad == "invalid_date":
            dtxt = rng.choice(["31.04.2022", "2022-04-11", "01.13.2020", "05.07.2031"])
        if bad == "invalid_amount":
            amount = rng.choice(["", "1.234.56", "-5,00", "zwölf"])
    else:
        country = rng.choice([code, code, en])
        dtxt = d.strftime("%m/%d/%Y")
        amount = str(cents)
        if bad == "invalid_date":
            dtxt = rng.choice(["13/01/2020", "02/29/2023", "1999-12-31", "12/31/1999"])
        if bad == "invalid_amount":
            amount = rng.choice(["", "12.5", "-300", "1e3"])
    if bad == "unknown_country":
        country = rng.choice(["Atlantis", "XX", "Europe", ""])
    if bad:
        rejects.append((s, row_no, bad))
    ids[s] += rng.randint(1, 9)
    rec["source_id"] = "%s:%s%d" % (s, s[0].upper(), ids[s])
    rec["row_no"] = row_no
    return ["%s%d" % (s[0].upper(), ids[s]), name, email, phone, country, dtxt, amount]


# north: UTF-8 with BOM, comma separated, standard quoting
buf = io.StringIO()
w = csv.writer(buf, lineterminator="\r\n")
w.writerow(["customer_id", "full_name", "email", "phone", "country", "signup_date", "lifetime_value"])
for i, rec in enumerate(rows["north"], 1):
    w.writerow(render(rec, "north", i))
with open(out + "/crm_north.csv", "w", encoding="utf-8-sig", newline="") as f:
    f.write(buf.getvalue())

# south: ISO-8859-1, semicolon separated
buf = io.StringIO()
w = csv.writer(buf, delimiter=";", lineterminator="\n")
w.writerow(["ID", "Name", "E-Mail", "Telefon", "Land", "Registriert", "Umsatz"])
for i, rec in enumerate(rows["south"], 1):
    w.writerow(render(rec, "south", i))
with open(out + "/crm_south.csv", "w", encoding="iso-8859-1", newline="") as f:
    f.write(buf.getvalue())

# west: UTF-8, tab separated, no quoting needed
buf = io.StringIO()
w = csv.writer(buf, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE, escapechar="\\")
w.writerow(["id", "name", "email", "phone", "country", "signup", "ltv_cents"])
for i, rec in enumerate(rows["west"], 1):
    w.writerow(render(rec, "west", i))
with open(out + "/crm_west.tsv", "w", encoding="utf-8", newline="") as f:
    f.write(buf.getvalue())

ref = out + "/../reference"
os.makedirs(ref, exist_ok=True)
with open(ref + "/countries.csv", "w", encoding="utf-8", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["code", "name_en", "name_de", "calling_code"])
    for c in sorted(COUNTRIES):
        w.writerow(c)

if truth_path:
    customers = []
    for e, recs in sorted(truth.items()):
        p = recs[0]["person"]
        recs = sorted(recs, key=lambda r: (SOURCES.index(r["source"]), r["row_no"]))
        phones = ["+" + p["country"][3] + p["national"] for r in recs
                  if p["national"] is not None and not r.get("no_phone")]
        customers.append(dict(email=e, name=recs[0].get("name_override", p["name"]),
                              phone=phones[0] if phones else None, country=p["country"][0],
                              signup_date=min(r["signup"] for r in recs).isoformat(),
                              lifetime_value_cents=sum(r["cents"] for r in recs),
                              sources=sorted(r["source_id"] for r in recs)))
    read = {s: len(rows[s]) for s in SOURCES}
    summary = dict(rows_read=read, rows_rejected=len(rejects), customers=len(customers),
                   duplicates_merged=sum(read.values()) - len(rejects) - len(customers),
                   total_lifetime_value_cents=sum(c["lifetime_value_cents"] for c in customers))
    with open(truth_path, "w") as f:
        json.dump(dict(customers=customers, rejects=sorted(rejects), summary=summary), f, ensure_ascii=False, indent=1)
