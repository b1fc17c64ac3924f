"""A made-up Debian archive on 127.0.0.1: signed InRelease files (a key made for the test)
and Packages lists naming fake_apt's kernel packages, served by a local http.server, for
plugpull's own apt to fetch for real."""

import email.utils
import gzip
import hashlib
import http.server
import os
import shutil
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from tests.fake_apt import PACKAGES
from plugpull.kernels.sources import SUITES, Archive


def packages_text() -> str:
    return "".join(f"Package: {name}\nVersion: {version}\nArchitecture: amd64\n"
                   f"Filename: pool/main/l/{name}_{version}_amd64.deb\nSize: 10\n"
                   f"SHA256: {hashlib.sha256(name.encode()).hexdigest()}\nDescription: test\n\n"
                   for name, (version, _, _) in PACKAGES.items())


def release_text(suite: str, files: dict) -> str:
    sums = "".join(f" {hashlib.sha256(data).hexdigest()} {len(data)} {path}\n" for path, data in files.items())
    return (f"Origin: plugpull tests\nSuite: {suite}\nCodename: {suite}\n"
            f"Date: {email.utils.formatdate(usegmt=True)}\nArchitectures: amd64\nComponents: main\nSHA256:\n{sums}")


@contextmanager
def signing_key(keyring: Path):
    """A signing key in a fresh GnuPG home (short-lived, its agent stopped on leaving); its
    public key written to `keyring`. Yields the home."""
    home = Path(tempfile.mkdtemp(prefix="pp-gpg-"))  # short: the agent's socket path is limited
    env = {**os.environ, "GNUPGHOME": str(home)}
    try:
        subprocess.run(["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key",
                        "plugpull tests <tests@archive.invalid>", "ed25519", "sign", "never"],
                       check=True, capture_output=True, env=env)
        keyring.write_bytes(subprocess.run(["gpg", "--export"], check=True, capture_output=True, env=env).stdout)
        yield home
    finally:
        subprocess.run(["gpgconf", "--kill", "all"], capture_output=True, env=env)
        shutil.rmtree(home, ignore_errors=True)


def build_archive(folder: Path, home: Path) -> None:
    """Every suite plugpull asks for, each with the same main/binary-amd64 Packages."""
    plain = packages_text().encode()
    files = {"main/binary-amd64/Packages": plain, "main/binary-amd64/Packages.gz": gzip.compress(plain, mtime=0)}
    for suite in SUITES:
        dists = folder / "debian" / "dists" / suite
        for path, data in files.items():
            (dists / path).parent.mkdir(parents=True, exist_ok=True)
            (dists / path).write_bytes(data)
        (dists / "Release").write_text(release_text(suite, files))
        subprocess.run(["gpg", "--batch", "--yes", "--clearsign", "-o", str(dists / "InRelease"), str(dists / "Release")],
                       check=True, capture_output=True, env={**os.environ, "GNUPGHOME": str(home)})


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextmanager
def served(folder: Path):
    """`folder` over HTTP on 127.0.0.1; stopped on leaving."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/debian"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def fake_archive(tmp: Path):
    """An `Archive` on a made-up, signed archive served on 127.0.0.1."""
    tmp.mkdir(parents=True, exist_ok=True)
    keyring = tmp / "archive-keyring.gpg"
    with signing_key(keyring) as home:
        build_archive(tmp / "www", home)
    with served(tmp / "www") as uri:
        yield Archive(uri, keyring)
