"""Build script for pyrdk._rdkafka (cffi out-of-line API mode).

The extension is compiled against the real ``rdkafka.h`` but is **not** linked to
librdkafka: ``pyrdk/_loader.py`` opens the runtime library with ``RTLD_GLOBAL``
before the extension is imported, and the dynamic linker resolves its symbols then.
Set ``PYRDK_RDKAFKA_INCLUDE`` to a directory holding ``librdkafka/rdkafka.h`` to
build against other headers than ``/usr/include``.
"""
import os

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
CDEF_DIR = os.path.join(HERE, "csrc", "cdef")
# types.h first: the other files use its types and can then come in any order.
CDEF_FILES = ["types.h", "guard.h", "conf.h", "error.h", "handle.h", "topic.h", "message.h", "queue.h",
              "consumer.h", "partitions.h", "metadata.h", "admin.h", "mock.h", "callbacks.h",
              "transaction.h"]
# The C helpers are declared once, in their own headers; cdef reads them without the
# preprocessor lines, which it cannot parse.
HELPERS_HEADERS = [os.path.join(HERE, "csrc", name)
                   for name in ("pyrdk_helpers.h", "pyrdk_admin.h", "pyrdk_mock.h")]


def _include_dirs():
    dirs = [os.path.join(HERE, "csrc")]
    extra = os.environ.get("PYRDK_RDKAFKA_INCLUDE")
    if extra:
        dirs.insert(0, extra)
    return dirs


def _check_headers(include_dirs):
    candidates = include_dirs + ["/usr/include", "/usr/local/include"]
    if not any(os.path.exists(os.path.join(d, "librdkafka", "rdkafka.h")) for d in candidates):
        raise SystemExit("pyrdk: librdkafka/rdkafka.h not found. Install the headers "
                         "(apt-get install librdkafka-dev) or set PYRDK_RDKAFKA_INCLUDE "
                         "to the directory that holds librdkafka/rdkafka.h.")


ffibuilder = FFI()
for name in CDEF_FILES:
    with open(os.path.join(CDEF_DIR, name)) as f:
        ffibuilder.cdef(f.read())
for header in HELPERS_HEADERS:
    with open(header) as f:
        ffibuilder.cdef("".join(line for line in f if not line.lstrip().startswith("#")))

_include = _include_dirs()
_check_headers(_include)
ffibuilder.set_source(
    "pyrdk._rdkafka",
    """
    #include <librdkafka/rdkafka.h>
    #include <librdkafka/rdkafka_mock.h>
    #include "pyrdk_helpers.h"
    #include "pyrdk_admin.h"
    #include "pyrdk_mock.h"
    """,
    sources=[os.path.relpath(os.path.join(HERE, "csrc", name))
             for name in ("pyrdk_helpers.c", "pyrdk_admin.c", "pyrdk_mock.c")],
    include_dirs=_include,
    # No libraries=["rdkafka"]: the runtime library is chosen by pyrdk/_loader.py.
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
