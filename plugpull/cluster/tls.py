"""The TLS files of a cluster member, tried here before anything listens or connects: each a
regular file, the certificate and its key a pair, the certificate signed by the CA (a TLS
handshake between two in-memory ends, each side showing the member's certificate and trusting
only the CA, as the members will). Garbage or a mismatch is a one-line `UsageError`, not an
exit 3 from deep in Dask."""

import ssl
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import check_input

HANDSHAKE_ROUNDS = 20


def _reason(e: Exception) -> str:
    reason = getattr(e, "verify_message", None) or getattr(e, "reason", None) or str(e).splitlines()[0]
    return "no PEM data in it" if reason == "PEM lib" else reason


def check_tls_files(ca: Path, cert: Path, key: Path) -> None:
    """Refuse TLS files that no member could use: a `UsageError` naming the option."""
    for path, flag in ((ca, "--tls-ca-file"), (cert, "--tls-cert"), (key, "--tls-key")):
        check_input(Path(path), flag)  # a FIFO is said as one, not as missing
        if not Path(path).is_file():
            raise UsageError(f"{flag} {path}: no such file")
    contexts = []
    for side in (ssl.PROTOCOL_TLS_SERVER, ssl.PROTOCOL_TLS_CLIENT):
        ctx = ssl.SSLContext(side)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_REQUIRED
        try:
            ctx.load_verify_locations(cafile=str(ca))
        except (ssl.SSLError, OSError, ValueError) as e:
            raise UsageError(f"--tls-ca-file {ca}: not a CA certificate ({_reason(e)})") from None
        try:
            ctx.load_cert_chain(str(cert), str(key))
        except (ssl.SSLError, OSError, ValueError) as e:
            raise UsageError(f"--tls-cert {cert} and --tls-key {key}: not a certificate and its key "
                             f"({_reason(e)})") from None
        contexts.append(ctx)
    try:
        _handshake(*contexts)
    except ssl.SSLError as e:
        raise UsageError(f"--tls-cert {cert}: not accepted with --tls-ca-file {ca} ({_reason(e)})") from None


def _handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> None:
    """A TLS handshake between two ends in memory; an `ssl.SSLError` when either refuses."""
    to_server, from_server, to_client, from_client = (ssl.MemoryBIO() for _ in range(4))
    server = server_ctx.wrap_bio(to_server, from_server, server_side=True)
    client = client_ctx.wrap_bio(to_client, from_client, server_side=False)
    done = set()
    for _ in range(HANDSHAKE_ROUNDS):
        for name, end in (("client", client), ("server", server)):
            if name not in done:
                try:
                    end.do_handshake()
                    done.add(name)
                except ssl.SSLWantReadError:
                    pass
        to_server.write(from_client.read())
        to_client.write(from_server.read())
        if len(done) == 2:
            return
    raise ssl.SSLError("the handshake did not finish")
