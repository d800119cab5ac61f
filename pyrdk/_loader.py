"""Choose and open the librdkafka that pyrdk runs on.

The extension ``pyrdk._rdkafka`` is built without linking librdkafka, so this
module opens a library with ``RTLD_GLOBAL`` first, in this order:

1. the file named by ``$PYRDK_LIBRDKAFKA``;
2. the copy bundled in the ``confluent-kafka`` wheel (``confluent_kafka.libs``);
3. the system ``librdkafka.so.1``.
"""
import ctypes
import glob
import importlib.util
import os

_loaded = None


def candidates():
    """The library paths to try, best first, as ``(path, where)`` pairs."""
    found = []
    env = os.environ.get("PYRDK_LIBRDKAFKA")
    if env:
        return [(env, "$PYRDK_LIBRDKAFKA")]
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is not None and spec.submodule_search_locations:
        site = os.path.dirname(list(spec.submodule_search_locations)[0])
        for path in sorted(glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*"))):
            found.append((path, "the confluent-kafka wheel"))
    found.append(("librdkafka.so.1", "the system"))
    return found


def load():
    """Open the runtime librdkafka with RTLD_GLOBAL; return ``(path, where)``."""
    global _loaded
    if _loaded is not None:
        return _loaded
    errors = []
    for path, where in candidates():
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            errors.append("%s (%s): %s" % (path, where, exc))
            continue
        _loaded = (path, where)
        return _loaded
    raise ImportError(
        "pyrdk could not load librdkafka. Tried: %s. Install confluent-kafka "
        "(pip install confluent-kafka), or librdkafka1, or set PYRDK_LIBRDKAFKA to the "
        "path of librdkafka.so.1." % "; ".join(errors))
