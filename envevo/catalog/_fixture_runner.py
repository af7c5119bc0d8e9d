#!/usr/bin/env python3
"""Builds this task's fixtures during the image build; deleted right after it runs."""

SPEC: list[dict] = []  # each task's copy has its fixture operations here

import gzip, io, os, shutil, sqlite3, subprocess, tarfile, tempfile


def _parent(path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)


def _write(path, data, mode):
    _parent(path)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def _tar(op):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for m in op["members"]:
            data = m["text"].encode()
            info = tarfile.TarInfo(m["name"])
            info.size, info.mtime, info.mode = len(data), op["mtime"], 0o644
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    _parent(op["path"])
    with open(op["path"], "wb") as f:
        f.write(gzip.compress(buf.getvalue(), mtime=0))


def _git(op):
    repo = op["path"]
    os.makedirs(repo, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
    for c in op["commits"]:
        for rel, text in c.get("files", {}).items():
            _write(os.path.join(repo, rel), text.encode(), 0o644)
        name, mail = c["author"].rsplit(" <", 1)
        env = dict(os.environ, GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=mail.rstrip(">"), GIT_AUTHOR_DATE=c["date"],
                   GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=mail.rstrip(">"), GIT_COMMITTER_DATE=c["date"])
        subprocess.run(["git", "-C", repo, "add", "-A"], check=True)
        subprocess.run(["git", "-C", repo, "commit", "-q", "-m", c["message"]], check=True, env=env)
        if c.get("tag"):
            subprocess.run(["git", "-C", repo, "tag", c["tag"]], check=True, env=env)


_CA_CNF = """[ca]
default_ca = local
[local]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = anything
unique_subject = no
[anything]
commonName = supplied
organizationName = optional
"""


def _cert(op):
    tmp = tempfile.mkdtemp()
    run = lambda *a: subprocess.run(list(a), check=True, cwd=tmp, capture_output=True)
    with open(os.path.join(tmp, "ca.cnf"), "w") as f:
        f.write(_CA_CNF)
    open(os.path.join(tmp, "index.txt"), "w").close()
    with open(os.path.join(tmp, "serial"), "w") as f:
        f.write("%08X\n" % op["serial"])  # openssl wants an even number of hex digits
    run("openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "k.pem", "-subj", "/CN=%s/O=%s" % (op["cn"], op["org"]), "-out", "r.csr")
    run("openssl", "ca", "-batch", "-config", "ca.cnf", "-selfsign", "-keyfile", "k.pem", "-in", "r.csr",
        "-startdate", op["not_before"], "-enddate", op["not_after"], "-notext", "-out", "c.pem")
    with open(os.path.join(tmp, "c.pem"), "rb") as f:
        pem = f.read()
    if op.get("header"):
        pem = op["header"].encode() + pem
    _parent(op["cert"])
    with open(op["cert"], "ab" if op.get("append") else "wb") as f:
        f.write(pem)
    os.chmod(op["cert"], 0o644)
    if op.get("key"):
        _parent(op["key"])
        shutil.copyfile(os.path.join(tmp, "k.pem"), op["key"])
        os.chmod(op["key"], 0o600)
    shutil.rmtree(tmp)


def main():
    for op in SPEC:
        kind = op["op"]
        if kind == "write":
            _write(op["path"], op["text"].encode(), op["mode"])
        elif kind == "gzip":
            _write(op["path"], gzip.compress(op["text"].encode(), mtime=0), op["mode"])
        elif kind == "tar":
            _tar(op)
        elif kind == "sqlite":
            _parent(op["path"])
            db = sqlite3.connect(op["path"])
            db.executescript(op["sql"])
            db.commit()
            db.close()
        elif kind == "git":
            _git(op)
        elif kind == "cert":
            _cert(op)
        elif kind == "chmod":
            os.chmod(op["path"], op["mode"])
        elif kind == "mkdir":
            os.makedirs(op["path"], exist_ok=True)
            os.chmod(op["path"], op["mode"])
        else:
            raise SystemExit("unknown fixture op %r" % kind)


main()
