"""Machine limits read from a failed build's log: what this host, not the task, kept from building.

Each reader returns the cause in words a verdict can quote, or None. A cause here makes a verdict inconclusive (no test
ran, the task may be sound), never a fail:

- a download from a host this machine cannot reach (a model hub, a GitHub release, a vendor's installer): name
  resolution or the connection failed, so the task's URL was never tried;
- a pinned wheel that does not exist for the stand-in's Python: the task asks for `python:3.12`, this host stands in
  Debian's 3.13, pip finds no wheel of the pinned version for 3.13 and builds it from source (and fails), or finds
  none at all ("Requires-Python").
"""

from __future__ import annotations

import re

from envevo.runtime import STANDIN_LINE

# (pattern, group naming the host or None). What curl, git, wget, Python (urllib, urllib3, requests), node and go
# print when a host cannot be resolved or reached.
_UNREACHABLE = [
    re.compile(r"Could not resolve host:? (?P<host>[\w.-]+)"),  # curl, git over curl
    re.compile(r"Failed to connect to (?P<host>[\w.-]+) port \d+"),  # curl
    re.compile(r"unable to resolve host address [‘'\"]?(?P<host>[\w.-]+)"),  # wget
    re.compile(r"Failed to resolve [‘'\"]?(?P<host>[\w.-]+)"),  # urllib3 NameResolutionError (requests, hf hub)
    re.compile(r"getaddrinfo (?:ENOTFOUND|EAI_AGAIN) (?P<host>[\w.-]+)"),  # node, npm
    re.compile(r"dial tcp: lookup (?P<host>[\w.-]+)"),  # go
    re.compile(r"HTTPS?ConnectionPool\(host='(?P<host>[\w.-]+)'.*(?:Name or service not known|name resolution|"
               r"Network is unreachable|Connection refused|Max retries exceeded)"),
    re.compile(r"(?P<host>)(?:Name or service not known|Temporary failure in name resolution|"
               r"nodename nor servname provided|No address associated with hostname)"),  # urllib without a host name
]
_URL_HOST = re.compile(r"https?://(?P<host>[A-Za-z0-9.-]+\.[A-Za-z]{2,})")
_STEP = re.compile(r"^(?:STEP \d+(?:/\d+)?: |#\d+ \[.*\] )RUN ", re.M)


def unreachable_download(*texts: str) -> str | None:
    """The host a failed download tried to reach (`huggingface.co`), or `a host` when the log names none; None when
    nothing in `texts` says a host could not be resolved or reached."""
    for named in (True, False):  # a line naming the host wins over an earlier one that does not (pip's retries)
        for text in texts:
            for line in (text or "").splitlines():
                for pattern in _UNREACHABLE:
                    if (m := pattern.search(line)) and bool(m["host"]) == named:
                        return m["host"] or _step_host(text, line) or "a host"
    return None


def _step_host(text: str, line: str) -> str | None:
    """The host of the last URL named by the RUN step the line `line` came from (urllib names no host)."""
    upto = text[: text.find(line)]
    steps = list(_STEP.finditer(upto))
    step = upto[steps[-1].start():] if steps else upto
    hosts = _URL_HOST.findall(step)
    return hosts[-1] if hosts else None


def unreachable_line(host: str) -> str:
    return f"a download from {host}, which this host cannot reach"


# pip and uv, when a pinned version has no wheel for this Python and its source build fails, or none is listed.
_NO_WHEEL = [
    re.compile(r"Failed to build (?:installable wheels for some pyproject\.toml based projects \()?`?(?P<pkg>[\w.\-=]+)"),
    re.compile(r"Failed building wheel for (?P<pkg>[\w.\-]+)"),
    re.compile(r"Could not build wheels for (?P<pkg>[\w.\-]+)"),
    re.compile(r"No matching distribution found for (?P<pkg>[\w.\-=<>!~]+)"),
    re.compile(r"(?P<pkg>)metadata-generation-failed"),
]
_OTHER_PYTHON = re.compile(r"Requires-Python|require a different python version|requires-python", re.I)
_COLLECTING = re.compile(r"Collecting (?P<pkg>[\w.\-]+(?:[=<>!~]=?[\w.*]+)?)")
_SDIST = re.compile(r"Downloading (?P<name>[\w.\-]+?)-(?P<ver>\d[\w.]*)\.tar\.gz")
_STOOD_IN = re.compile(re.escape(STANDIN_LINE) + r"(?P<ref>\S+) → .*?Python (?P<given>\d+\.\d+)(?:\.\d+)?")
_ASKED = re.compile(r"(?:^|/)python:(?P<asked>\d+\.\d+)|python-(?P<major>\d)-(?P<minor>\d+)")


def missing_wheel(build_log: str) -> str | None:
    """When a pip or uv install failed for want of a wheel, on a stand-in whose Python is not the one the task's
    base asks for: the package, the Python asked and given, in a line; None otherwise (a source build that fails on
    the Python asked for is the task's own failure)."""
    stood = _STOOD_IN.search(build_log or "")
    if not stood:
        return None
    want = _ASKED.search(stood["ref"])
    if not want:
        return None
    asked = want["asked"] or f"{want['major']}.{want['minor']}"
    given = stood["given"]
    if asked == given:
        return None
    for pattern in _NO_WHEEL:
        m = pattern.search(build_log)
        if m is None or (m.re is _NO_WHEEL[3] and not _OTHER_PYTHON.search(build_log)):
            continue  # no distribution at all, for any Python: a misspelt or withdrawn pin is the task's own
        pkg = m["pkg"].rstrip(")") or _last_package(build_log[: m.start()])
        what = f"{pkg} has no wheel" if pkg else "a pinned package has no wheel"
        return (f"{what} for the stand-in's Python {given} and could not be built from source; the task asks for "
                f"{stood['ref']}, Python {asked}, which this host stands in with {given}")
    return None


def _last_package(text: str) -> str | None:
    """The package pip was working on last: its sdist's name and version, else the last `Collecting` line's."""
    sdists = list(_SDIST.finditer(text))
    if sdists:
        return f"{sdists[-1]['name']}=={sdists[-1]['ver']}"
    collecting = list(_COLLECTING.finditer(text))
    return collecting[-1]["pkg"] if collecting else None
