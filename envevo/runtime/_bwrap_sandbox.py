"""One bubblewrap sandbox per trial: the image's root file system read-only under a copy-on-write layer of its own.

The image is built by podman as for a container (cached by content); its root file system is the image's own
read-only mount (`podman image mount`, once per image and process: no byte is copied). Per sandbox:

- a *holder* process, started from here and killed with it (`setpriv --pdeathsig`), owns a private mount namespace
  where the trial's overlay (the image below, the trial's upper dir above; nosuid, nodev) is mounted, so a crash
  leaves no mount on the host; and a user namespace whose uid and gid maps are the identity (files keep their real
  owners, as in a rootful container) while every capability is one of that namespace only, a network namespace with
  loopback only, and its own IPC namespace. The holder runs no code of the sandbox's and is invisible from it;
- an *init* (`bwrap … --unshare-pid … sleep infinity`) owns the sandbox's pid namespace: killing it kills every
  process of the sandbox (the kernel ends a pid namespace with its init); and its UTS namespace (host name `sandbox`);
- each command is a new `bwrap` in those namespaces (`--userns`, `--pidns`, the holder's network), a fresh mount
  namespace showing only the overlay at `/`, a fresh /proc and a minimal /dev, `--new-session`, no-new-privs, every
  capability dropped except podman's default set for root; as the image's user, none;
- copies in and out are `tar` run *inside* a fresh sandbox over the same overlay (its root: an absolute link the
  agent made resolves inside it, as `podman cp` resolves in the container), the stream extracted on the host by
  envevo/runtime/_archive.py's rules. The host never opens a path under the upper dir.

No host path is reachable from a sandbox except its own overlay: the lower layer only through it, read-only.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import time
import uuid
from pathlib import Path

from envevo._home import home, private_dir

# podman's default capabilities for a container's root (containers.conf default_capabilities), here held in the
# sandbox's own user namespace only: root may chown, override file modes, change user; none acts on the host.
ROOT_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE",
             "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT")
_IDENTITY_MAP = "0 0 4294967295\n"
_NAMESPACES = ("mnt", "net", "ipc")  # the holder's; the UTS namespace (a host name of its own) is the init's
# Another user, by the image's setpriv: the group from the user's entry (else 0, as podman does), its supplementary
# groups when it has an entry, and no capability left in any set.
_AS_USER = ('u=$1; g=$2; shift 2; [ -n "$g" ] || g=$(id -g -- "$u" 2>/dev/null) || g=0; '
            'grp=--clear-groups; id -- "$u" >/dev/null 2>&1 && grp=--init-groups; '
            'exec setpriv --reuid="$u" --regid="$g" $grp --inh-caps=-all --bounding-set=-all -- "$@"')


def trials_root() -> Path:
    """Where the sandboxes' upper dirs live: private to this user, so nothing an agent left is reachable by others."""
    return private_dir(home() / "bwrap" / "sandboxes")


class BwrapSandbox:
    """The namespaces and overlay of one sandbox, and the argv of every process that runs in it."""

    def __init__(self, lower: str):
        self.lower = lower
        self.dir = trials_root() / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._holder: subprocess.Popen[bytes] | None = None
        self._init: subprocess.Popen[bytes] | None = None
        self._init_pidfd: int | None = None
        self._init_pid = 0

    # -- lifecycle --------------------------------------------------------------------------------

    def open(self, workdir: str | None = None) -> None:
        """Mount the overlay in the holder's namespaces and start the init. Blocking, milliseconds.

        `workdir` (the image's) is made when the image lacks it, as a container engine does at start: in the fresh
        upper dir, before any process of the sandbox exists."""
        for sub in ("upper", "work", "root"):
            (self.dir / sub).mkdir(parents=True, mode=0o700)
        os.chmod(self.dir / "upper", 0o755)  # the overlay's root dir takes the upper dir's mode
        if workdir:
            self._make_missing_dir(workdir)
        opts = f"lowerdir={self.lower},upperdir={self.dir / 'upper'},workdir={self.dir / 'work'}"
        mount = (f"mount -t overlay overlay -o {shlex.quote(opts)},nosuid,nodev {shlex.quote(str(self.dir / 'root'))}"
                 " && exec unshare --user --net --ipc sleep infinity")
        own_userns = os.readlink("/proc/self/ns/user")
        self._holder = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "unshare", "--mount", "--propagation", "private", "sh", "-c", mount],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while True:  # the holder is ready once it is in its own user namespace (the mount came first)
            if self._holder.poll() is not None:
                err = self._holder.stderr.read().decode(errors="replace") if self._holder.stderr else ""
                raise RuntimeError(f"the bwrap sandbox's overlay could not be set up: {err.strip()[-300:]}")
            try:
                if os.readlink(f"/proc/{self._holder.pid}/ns/user") != own_userns:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the bwrap sandbox's namespaces were not ready within 30 s")
            time.sleep(0.001)
        for kind in ("uid", "gid"):
            Path(f"/proc/{self._holder.pid}/{kind}_map").write_text(_IDENTITY_MAP)
        self.start_init()

    def start_init(self) -> None:
        """A new pid namespace for the sandbox's processes, with `sleep infinity` as its only process."""
        read, low = os.pipe()
        write = fcntl.fcntl(low, fcntl.F_DUPFD, 10)  # above the fds the wrapper opens (3, 4)
        os.close(low)
        try:
            argv = self._enter(["--unshare-pid", "--unshare-uts", "--hostname", "sandbox", "--info-fd", str(write),
                                "--cap-drop", "ALL", *self._mounts(rw=True), "--", "sh", "-c", "sleep infinity"],
                               pidns=False)
            self._init = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, pass_fds=(write,))
        finally:
            os.close(write)
        with os.fdopen(read, "rb") as info:
            data = info.read()
        try:
            self._init_pid = int(json.loads(data)["child-pid"])
            self._init_pidfd = os.pidfd_open(self._init_pid)
        except (ValueError, KeyError, OSError):
            err = self._init.stderr.read().decode(errors="replace") if self._init.poll() is not None and self._init.stderr else ""
            self.kill_init()
            raise RuntimeError(f"bwrap did not start the sandbox: {err.strip()[-300:] or data[:200]!r}") from None

    def _make_missing_dir(self, path: str) -> None:
        parts = [p for p in path.split("/") if p and p != "."]
        if ".." in parts:
            return
        lower, upper = Path(self.lower), self.dir / "upper"
        for part in parts:
            lower = lower / part
            try:
                if not stat.S_ISDIR(os.lstat(lower).st_mode):
                    return  # a link or a file there: the image's business, not made over
            except FileNotFoundError:
                upper.joinpath(*parts).mkdir(parents=True, mode=0o755, exist_ok=True)
                return

    @property
    def running(self) -> bool:
        return self._init is not None and self._init.poll() is None

    def kill_init(self) -> None:
        """Every process of the sandbox ends: its pid namespace's init is killed, and the kernel kills the rest.
        Returns once they are gone (bwrap's monitor exits after its child, the init, has been reaped)."""
        init, self._init = self._init, None
        if self._init_pidfd is not None:
            try:
                signal.pidfd_send_signal(self._init_pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(self._init_pidfd)
            self._init_pidfd = None
        if init is not None:
            if init.poll() is None:
                init.kill()
            init.wait()
            if init.stderr is not None:
                init.stderr.close()

    def close(self) -> None:
        """Kill everything and remove the upper dir (the overlay goes with the holder's mount namespace)."""
        self.kill_init()
        holder, self._holder = self._holder, None
        if holder is not None:
            holder.kill()
            holder.wait()
            if holder.stderr is not None:
                holder.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)  # fd-based, never follows a link the agent made

    # -- argv -------------------------------------------------------------------------------------

    def _ns(self, kind: str) -> str:
        assert self._holder is not None, "the sandbox is not open"
        return f"/proc/{self._holder.pid}/ns/{kind}"

    def _mounts(self, *, rw: bool) -> list[str]:
        return ["--bind" if rw else "--ro-bind", str(self.dir / "root"), "/", "--proc", "/proc", "--dev", "/dev"]

    def _enter(self, bwrap_args: list[str], *, pidns: bool, own_namespaces: bool = False) -> list[str]:
        """The argv that runs bwrap in the holder's mount namespace (where the overlay is) and user namespace;
        in its network and IPC namespaces unless `own_namespaces`; in the init's pid and UTS namespaces if `pidns`."""
        kinds = ("mnt",) if own_namespaces else _NAMESPACES
        nsenter = ["nsenter", *(f"--{'mount' if k == 'mnt' else k}={self._ns(k)}" for k in kinds),
                   *([f"--uts=/proc/{self._init_pid}/ns/uts"] if pidns else []), "--"]
        opens = 'exec 3<"$1"' + (' 4<"$2"' if pidns else "")
        head = ["bwrap", "--userns", "3", *(["--pidns", "4"] if pidns else []), "--die-with-parent", "--new-session",
                *(["--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-pid"] if own_namespaces else [])]
        paths = [self._ns("user"), *([f"/proc/{self._init_pid}/ns/pid"] if pidns else [])]
        return ["sh", "-c", f'{opens}; shift {len(paths)}; exec "$@"', "sh", *paths, *nsenter, *head, *bwrap_args]

    def exec_argv(self, command: str, *, user: str | None, cwd: str | None, env: dict[str, str]) -> list[str]:
        """A command in the sandbox's namespaces, as root (podman's default capabilities, in the sandbox's user
        namespace only) or as `user` (a name, uid or uid:gid; no capability at all).

        bwrap cannot switch to another uid inside a user namespace it joined (it drops its capabilities before
        mounting), so another user is reached by the image's `setpriv` (util-linux): started as root in the sandbox,
        it sets the user and ends with no capability and no-new-privs (bwrap's) before running the command."""
        caps = ["--cap-drop", "ALL", *(a for c in ROOT_CAPS for a in ("--cap-add", c))]
        args = [*caps, *self._mounts(rw=True), "--clearenv"]
        for key, value in env.items():
            args += ["--setenv", key, value]
        if cwd:
            args += ["--chdir", cwd]
        run = ["bash", "-c", command]
        if user is not None:
            uid, _, gid = user.partition(":")
            run = ["sh", "-c", _AS_USER, "sh", uid, gid, *run]
        return self._enter([*args, "--", *run], pidns=True)

    def copy_out_argv(self, source: str) -> list[str]:
        """`tar` of `source` (its parent as the archive's root, as `podman cp CTR:PATH -` makes it), run in a sandbox
        of its own over the read-only overlay: nothing of the agent's runs beside it, no network."""
        path = source.rstrip("/") or "/"
        parent, name = (path.rsplit("/", 1) + [""])[:2] if path != "/" else ("/", ".")
        # In name order when this tar can, as podman cp sends it: a reward file before a sparse giant.
        script = ('cd "$1" 2>/dev/null && { [ -e "$2" ] || [ -L "$2" ]; } '
                  '|| { echo "$1/$2: no such file or directory" >&2; exit 1; }; '
                  's=; tar --sort=name -cf /dev/null -T /dev/null 2>/dev/null && s=--sort=name; exec tar $s -cf - -- "$2"')
        args = ["--cap-drop", "ALL", "--cap-add", "CAP_DAC_READ_SEARCH", *self._mounts(rw=False),
                "--", "sh", "-c", script, "sh", parent or "/", name]
        return self._enter(args, pidns=False, own_namespaces=True)

    def copy_in_argv(self) -> list[str]:
        """`tar -x` at / of an archive on stdin (names relative to /), as root in a sandbox of its own."""
        caps = ["--cap-drop", "ALL", *(a for c in ROOT_CAPS for a in ("--cap-add", c))]
        args = [*caps, *self._mounts(rw=True), "--", "tar", "-C", "/", "-xpf", "-"]
        return self._enter(args, pidns=False, own_namespaces=True)


def sweep_stale() -> None:
    """Remove the upper dirs a killed process left (named by its pid; the overlay died with its holder)."""
    root = home() / "bwrap" / "sandboxes"
    if not root.is_dir():
        return
    for entry in root.iterdir():
        pid = entry.name.split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(entry, ignore_errors=True)


def bwrap_probe(root_fs: str) -> str | None:
    """None when a sandbox starts over `root_fs` (an image's mounted root file system), runs a command and copies a
    file out; else why not, in one line."""
    box = BwrapSandbox(root_fs)
    try:
        box.open()
        run = subprocess.run(box.exec_argv("echo ok > /probe.txt && cat /probe.txt", user=None, cwd="/", env={}),
                             capture_output=True, text=True, timeout=60)
        if run.stdout.strip() != "ok":
            return f"a command failed: {(run.stderr or run.stdout).strip()[-200:]}"
        copy = subprocess.run(box.copy_out_argv("/probe.txt"), capture_output=True, timeout=60)
        if copy.returncode != 0 or b"ok" not in copy.stdout:
            return f"a copy out failed: {copy.stderr.decode(errors='replace').strip()[-200:]}"
        return None
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
        return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    finally:
        box.close()
