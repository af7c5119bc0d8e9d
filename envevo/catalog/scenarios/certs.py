"""Certificate scenarios: nginx virtual hosts with TLS keys, a certificate directory, a PEM bundle."""

from __future__ import annotations

from envevo.catalog import _fixtures as F
from envevo.catalog import _recipes as R
from envevo.catalog.scenarios._base import Scenario
from envevo.catalog.scenarios.tree import FileTree, stamp


class KeyedCertTree(FileTree):
    """A file tree whose every name also has a TLS certificate and a private key that must be mode 0600."""

    CERT_PATH: str  # {key} -> the certificate's path
    KEY_DIR: str
    SERIAL_BASE = 0
    LOOSE_KEY_MODES: tuple[int, ...]  # what a key's mode is when it is wrong

    def decorate(self, rng, inst):
        super().decorate(rng, inst)
        for r in inst.rows:
            r.extra["mode"] = 0o644
            r.extra["key_mode"] = rng.choice(list(self.LOOSE_KEY_MODES)) if rng.random() < 0.4 else 0o600

    def extra_ops(self, inst):
        ops = []
        for r in inst.rows:
            ops.append(F.cert(f"{r.key}.example.internal", r.group, self.SERIAL_BASE + r.value, "20230101000000Z",
                              stamp(r.date), self.CERT_PATH.format(key=r.key), f"{self.KEY_DIR}/{r.key}.key"))
            ops.append(F.chmod(f"{self.KEY_DIR}/{r.key}.key", r.extra["key_mode"]))
        return ops + [self.archive_op(inst)]

    def perm(self, inst):
        return R.PermSrc(root=self.KEY_DIR, glob="*.key", mode=0o600, key_sed="s#.*/##; s/\\.key$//",
                         files={r.key: f"{r.key}.key" for r in inst.rows}, modes={r.key: r.extra["key_mode"] for r in inst.rows},
                         what="private key")

    def pem(self, inst):
        return R.PemSrc(glob=self.CERT_PATH.format(key="*"))


class NginxConfig(KeyedCertTree):
    id = "nginx_config"

    def relpath(self, r):
        return f"{r.key}.conf"

    def content(self, r, old=False):
        note = f"# {r.note}\n" if r.note else ""
        return (f"{note}server {{\n    listen 443 ssl;\n    server_name {r.key}.example.internal;\n    root /srv/{r.group};\n"
                f"    client_max_body_size {r.extra['old_value'] if old else r.value}m;\n"
                f"    ssl_certificate /app/nginx/ssl/{r.key}.crt;\n    ssl_certificate_key /app/nginx/ssl/{r.key}.key;\n"
                + "".join(f"    location /v{i}/ {{ proxy_pass http://127.0.0.1:{8000 + i}; }}\n" for i in range(r.extra["more"]))
                + "}\n")


class CertDirectory(KeyedCertTree):
    id = "cert_directory"

    def relpath(self, r):
        return f"{r.key}.cnf"

    def content(self, r, old=False):
        bits = 2048 if old else 256
        return (f"# {r.note or 'issued by the platform team'}\n[req]\ndistinguished_name = dn\nprompt = no\n"
                f"default_bits = {bits}\n\n[dn]\nCN = {r.key}.example.internal\nO = {r.group}\n"
                + "".join(f"# alt name {i}: {r.key}-{i}.example.internal\n" for i in range(r.extra["more"])))


class CertBundle(Scenario):
    id = "cert_bundle"

    def render(self, inst):
        return [F.cert(f"{r.key}.example.internal", r.group, r.value, "20230101000000Z", stamp(r.date), self.PATH,
                       header=f"# {r.key}.example.internal team={r.group} serial={r.value} expires={r.date} ; {r.note or 'active'}\n",
                       append=True)
                for r in inst.rows]


SCENARIOS = (NginxConfig, CertDirectory, CertBundle)
