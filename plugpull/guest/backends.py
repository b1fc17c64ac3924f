"""The backends by name, as `--backend` and `--connect` choose them, checked before any guest
boots: a bad value is a `UsageError`, and for libvirt the daemons are started (when this host
is the one meant and nobody runs them) and the connection is tried once."""

import logging
import re
from dataclasses import dataclass, field

from plugpull.errors import InfraError, UsageError
from plugpull.values import shown
from plugpull.guest.contract.backend import Backend
from plugpull.guest.qemu.machine import QEMU

log = logging.getLogger(__name__)

BACKENDS = ("qemu", "libvirt")
DEFAULT_URI = "qemu:///system"
_URI = re.compile(r"^qemu(\+[a-z]+)?://[^\s/]*/(system|session)(\?\S*)?$")


def checked_uri(text: str, where: str = "--connect") -> str:
    """A libvirt QEMU URI: qemu:///system, qemu+tcp://HOST/system, qemu+ssh://USER@HOST/system."""
    if not _URI.match(text):
        raise UsageError(f"bad {where} {text!r}: expected a libvirt QEMU URI such as {DEFAULT_URI}")
    return text


def is_local_system(uri: str) -> bool:
    return uri == "qemu:///system"


_THIS_MACHINE = re.compile(r"^qemu(\+[a-z]+)?://(?:[^@/]*@)?(|127\.0\.0\.1|localhost|\[::1\])(:\d+)?/")


def on_this_machine(uri: str) -> bool:
    """Whether the host of a URI is this machine, where the staging of files (hard links
    under the temp dir) and the unix-socket channels reach its QEMUs. Other hosts are reached
    through the connection only (`libvirt.remote`)."""
    return bool(_THIS_MACHINE.match(uri))


def checked_hosts(uris: list[str], where: str = "--hosts") -> list[str]:
    """The checker's hosts (`--hosts URI[,URI...]`, a case file's [hosts]): libvirt URIs,
    none twice."""
    if uris and not all(u.strip() for u in uris):  # a stray comma: refused, never dropped
        raise UsageError(f"{where}: an empty name in the list {shown(','.join(uris))}")
    uris = [checked_uri(u.strip(), where) for u in uris]
    if not uris:
        raise UsageError(f"{where} needs at least one libvirt URI")
    if len(set(uris)) != len(uris):
        raise UsageError(f"{where} names a host twice: {','.join(uris)}")
    return uris


def prepare_hosts(uris: list[str], where: str = "--hosts") -> list["Prepared"]:
    """Each host's backend, connected; on a failure, what was started stops."""
    prepared: list = []
    try:
        for uri in checked_hosts(uris, where):
            prepared.append(_prepare_libvirt(uri, where))
    except BaseException:
        for p in prepared:
            p.close()
        raise
    return prepared


@dataclass
class Prepared:
    """A backend ready to use and what to undo at the end (the daemons it started)."""

    backend: Backend
    version: str = ""
    _daemons: object = field(default=None, repr=False)

    def close(self) -> None:
        if self._daemons is not None:
            self._daemons.stop()


def prepare_backend(name: str, uri: str | None = None) -> Prepared:
    if name not in BACKENDS:
        raise UsageError(f"bad --backend {name!r}: expected one of {', '.join(BACKENDS)}")
    if name == "qemu":
        if uri is not None:
            raise UsageError("--connect needs --backend libvirt")
        return Prepared(QEMU)
    uri = checked_uri(uri or DEFAULT_URI)
    if not on_this_machine(uri):
        raise UsageError(f"--connect {uri}: guests that record run on this machine (their write logs are "
                         "read here); give other hosts with --hosts, to check states")
    return _prepare_libvirt(uri)


def _prepare_libvirt(uri: str, where: str = "--connect") -> Prepared:
    try:
        import libvirt
        from plugpull.guest.libvirt.machine import LibvirtBackend
    except ImportError:
        raise UsageError("--backend libvirt needs the libvirt-python package (make deps)") from None
    from plugpull.guest.libvirt.daemon import LocalDaemons
    daemons = LocalDaemons()
    if is_local_system(uri):
        from plugpull.guest.libvirt.kvmaccess import kvm_denied
        if slow := kvm_denied():
            log.warning(slow)
        try:
            daemons.ensure()
        except InfraError as e:
            daemons.stop()
            raise UsageError(f"--backend libvirt: {e}") from None
    try:
        conn = libvirt.open(uri)
        version = conn.getLibVersion()
        conn.close()
    except libvirt.libvirtError as e:
        daemons.stop()
        raise UsageError(f"bad {where} {uri}: {str(e).splitlines()[0]}") from None
    major, minor, micro = version // 1_000_000, version // 1000 % 1000, version % 1000
    return Prepared(LibvirtBackend(uri, remote=not on_this_machine(uri)), f"{major}.{minor}.{micro}", daemons)
