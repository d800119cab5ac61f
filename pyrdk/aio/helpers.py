"""aiokafka's ``create_ssl_context`` (``aiokafka.helpers``).

librdkafka does its own TLS (OpenSSL, in its threads) and cannot use a Python
``ssl.SSLContext``; so the context this helper makes remembers the files and the password it
was made from, and the producer and consumer hand those to librdkafka as its ``ssl.*``
properties (:func:`rdkafka_config`). The context is a real ``ssl.SSLContext`` all the same,
loaded from the same files (a wrong path or password fails here, as in aiokafka), and its
``check_hostname`` and ``verify_mode`` are read when a client starts.
"""
from __future__ import annotations

import os
import ssl
from collections.abc import Callable
from typing import Any, Union

from pyrdk.exceptions import NotSupportedError

_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
_Password = Union[str, bytes, bytearray, Callable[[], Union[str, bytes, bytearray]]]


class KafkaSSLContext(ssl.SSLContext):
    """An ``ssl.SSLContext`` made by :func:`create_ssl_context`, with the files it came from:
    ``cafile``, ``capath``, ``cadata``, ``certfile``, ``keyfile`` and ``password``."""

    cafile: Any = None
    capath: Any = None
    cadata: Any = None
    certfile: Any = None
    keyfile: Any = None
    password: Any = None

    def load_verify_locations(self, cafile=None, capath=None, cadata=None):
        """``SSLContext.load_verify_locations``, remembered for librdkafka (``ssl.ca.location``
        or ``ssl.ca.pem``), which takes a single CA location: a second is refused."""
        if sum(x is not None for x in (cafile, capath, cadata, self.cafile, self.capath, self.cadata)) > 1:
            raise NotSupportedError("give one of cafile, capath or cadata: librdkafka takes a single CA "
                                    "location (ssl.ca.location or ssl.ca.pem)")
        super().load_verify_locations(cafile, capath, cadata)
        # librdkafka's ssl.*.location properties are str: a path-like or bytes path (which the
        # ssl module takes, and aiokafka with it) is kept as the str it names
        self.cafile, self.capath = (os.fsdecode(p) if p is not None else None for p in (cafile, capath))
        self.cadata = cadata

    def load_cert_chain(self, certfile, keyfile=None, password=None):
        """``SSLContext.load_cert_chain``, remembered for librdkafka (``ssl.certificate.location``,
        ``ssl.key.location``, ``ssl.key.password``): also when the program calls it on the
        context ``create_ssl_context`` returned."""
        super().load_cert_chain(certfile, keyfile, password)
        self.certfile, self.keyfile = (os.fsdecode(p) if p is not None else None for p in (certfile, keyfile))
        self.password = password


def create_ssl_context(*, cafile: _Path | None = None, capath: _Path | None = None, cadata: str | bytes | None = None,
                       certfile: _Path | None = None, keyfile: _Path | None = None,
                       password: _Password | None = None) -> KafkaSSLContext:
    """An SSL context for ``security_protocol="SSL"`` (or ``"SASL_SSL"``), as aiokafka's:
    the brokers' certificates checked against ``cafile``, ``capath`` or ``cadata`` (the
    system's CAs when none is given) with their host names; ``certfile``/``keyfile``
    (``password`` for the key) for a client certificate."""
    if sum(x is not None for x in (cafile, capath, cadata)) > 1:
        raise NotSupportedError("give one of cafile, capath or cadata: librdkafka takes a single CA "
                                "location (ssl.ca.location or ssl.ca.pem)")
    if keyfile is not None and certfile is None:
        raise ValueError("keyfile needs the certfile it belongs to")
    context = KafkaSSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED, as aiokafka
    if cafile is None and capath is None and cadata is None:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    else:
        context.load_verify_locations(cafile, capath, cadata)
    if certfile is not None:
        context.load_cert_chain(certfile, keyfile, password)
    return context


def _der_to_pem(data) -> str:
    """The PEM text (for ``ssl.ca.pem``) of ``cadata`` given as bytes: one or more DER
    certificates one after the other, as ``load_verify_locations`` takes them. Each is an
    ASN.1 SEQUENCE (tag 0x30, then its length, short or long form); librdkafka would read
    only the first of them wrapped in one PEM block."""
    data = bytes(data)
    certs = []
    at = 0
    while at < len(data):
        first = data[at + 1]
        if first < 0x80:
            head, size = 2, first
        else:
            head = 2 + (first & 0x7F)
            size = int.from_bytes(data[at + 2:at + head], "big")
        certs.append(ssl.DER_cert_to_PEM_cert(data[at:at + head + size]))
        at += head + size
    return "".join(certs)


def rdkafka_config(context: ssl.SSLContext) -> dict[str, Any]:
    """librdkafka's ``ssl.*`` properties for ``context``, made by :func:`create_ssl_context`;
    ``NotSupportedError`` for any other ``ssl.SSLContext``."""
    if not isinstance(context, KafkaSSLContext):
        raise NotSupportedError("ssl_context must come from pyrdk.aio.helpers.create_ssl_context(): "
                                "librdkafka does its own TLS and can only use the files such a context "
                                "was made from, not a %s" % type(context).__name__)
    config: dict[str, Any] = {}
    if context.cafile is not None or context.capath is not None:
        config["ssl.ca.location"] = context.cafile if context.cafile is not None else context.capath
    elif context.cadata is not None:
        cadata = context.cadata
        config["ssl.ca.pem"] = cadata if isinstance(cadata, str) else _der_to_pem(cadata)
    if context.certfile is not None:
        config["ssl.certificate.location"] = context.certfile
        config["ssl.key.location"] = context.keyfile if context.keyfile is not None else context.certfile
        if context.password is not None:
            password = context.password() if callable(context.password) else context.password
            # the ssl module takes str, bytes or bytearray (from the callable too); librdkafka a str
            config["ssl.key.password"] = bytes(password).decode() if isinstance(password, (bytes, bytearray)) \
                else password
    config["ssl.endpoint.identification.algorithm"] = "https" if context.check_hostname else "none"
    config["enable.ssl.certificate.verification"] = context.verify_mode != ssl.CERT_NONE
    return config


__all__ = ["KafkaSSLContext", "create_ssl_context"]
