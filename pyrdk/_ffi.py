"""The only importer of the generated module ``pyrdk._rdkafka``.

It loads the runtime librdkafka first (``_loader``), then checks that the runtime
is not older than the ``rdkafka.h`` the extension was compiled against.
"""
from pyrdk import _loader

LIBRARY_PATH, LIBRARY_SOURCE = _loader.load()

from pyrdk._rdkafka import ffi, lib  # noqa: E402  (the library must be loaded first)

BUILD_VERSION = lib.RD_KAFKA_VERSION
RUNTIME_VERSION = lib.rd_kafka_version()


def version_str(version):
    """``0x020002ff`` → ``'2.0.2'``."""
    return "%d.%d.%d" % ((version >> 24) & 0xff, (version >> 16) & 0xff, (version >> 8) & 0xff)


if RUNTIME_VERSION < BUILD_VERSION:
    raise ImportError(
        "pyrdk was built against librdkafka %s but %s (from %s) is %s. Install a newer "
        "librdkafka or set PYRDK_LIBRDKAFKA to one at least as new as %s."
        % (version_str(BUILD_VERSION), LIBRARY_PATH, LIBRARY_SOURCE,
           ffi.string(lib.rd_kafka_version_str()).decode(), version_str(BUILD_VERSION)))


def string(cdata, default=None):
    """A C string as ``str`` (None for NULL)."""
    if cdata == ffi.NULL:
        return default
    return ffi.string(cdata).decode("utf-8", "replace")


def sized(data):
    """``data`` (bytes, or an instance of a subclass) as what to hand librdkafka with its
    ``len()``: a subclass may define ``__len__``, and librdkafka would read that many bytes
    from a shorter buffer; its buffer (``ffi.from_buffer``) has the true length."""
    return data if data.__class__ is bytes else ffi.from_buffer(data)
