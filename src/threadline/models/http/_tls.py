"""Certificates: the ``verify=`` an HTTP model takes (a CA bundle for a corporate CA, an ``ssl.SSLContext``, or
False), and how a certificate that could not be verified is told apart from other connection failures."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ...errors import UserError

if TYPE_CHECKING:
    import ssl
    from typing import TypeAlias

    Verify: TypeAlias = bool | str | os.PathLike[str] | ssl.SSLContext
    """What ``verify=`` takes, as httpx does: True (the default CAs, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), False
    (no verification), the path of a CA bundle (a file, or a directory of certificates), or an ``ssl.SSLContext``."""

__all__ = ["certificate_refused", "ssl_verify"]


def ssl_verify(verify: Verify, owner: str) -> bool | ssl.SSLContext:
    """``verify`` as httpx's transport takes it: a path becomes an ``ssl.SSLContext`` that trusts that bundle (httpx
    deprecates paths).

    Raises:
        UserError: for a path that names no readable bundle, or a value of another type (``owner`` names the
            class it was given to).
    """
    if isinstance(verify, bool):
        return verify
    if isinstance(verify, (str, os.PathLike)):
        import ssl

        path = os.fspath(verify)
        try:
            if os.path.isdir(path):
                return ssl.create_default_context(capath=path)
            return ssl.create_default_context(cafile=path)
        except (OSError, ssl.SSLError) as exc:
            raise UserError(
                f"verify= given to {owner} names no readable CA bundle: {path!r} ({exc.strerror or exc})"
            ) from None
    import ssl

    if isinstance(verify, ssl.SSLContext):
        return verify
    raise UserError(
        f"verify= given to {owner} must be True, False, the path of a CA bundle or an ssl.SSLContext, not"
        f" {type(verify).__name__}"
    )


def certificate_refused(error: BaseException) -> bool:
    """Whether a connection failed because the server's certificate could not be verified (somewhere in the chain of
    causes httpx raises it with)."""
    import ssl

    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False
