"""Conf: an owned ``rd_kafka_conf_t`` (``rd_kafka_conf_new`` / ``rd_kafka_conf_set``).

Topic-level properties go through the same call: librdkafka puts them in the default
topic configuration.
"""
from pyrdk._ffi import ffi, lib, string
from pyrdk.exceptions import ConfigurationError
from pyrdk.rd import errors


def to_str(key, value):
    """A Python config value as librdkafka's string, or TypeError naming the key."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (list, tuple)):
        return ",".join(to_str(key, v) for v in value)
    raise TypeError("rdkafka_config[%r] must be a str, bytes, int, float or bool, not %s"
                    % (key, type(value).__name__))


class Conf:
    """A librdkafka configuration under construction; ``rd_kafka_new`` takes it over."""

    def __init__(self, config=None):
        self._ptr = lib.rd_kafka_conf_new()
        for key, value in (config or {}).items():
            self.set(key, value)

    def set(self, key, value):
        """``rd_kafka_conf_set``; ConfigurationError names the key, the value and the reason."""
        if not isinstance(key, str):
            raise TypeError("configuration keys must be str, not %s: %r" % (type(key).__name__, key))
        text = to_str(key, value)
        buf = errors.errstr()
        res = lib.rd_kafka_conf_set(self._ptr, key.encode(), text.encode(), buf, errors.ERRSTR_SIZE)
        if res != lib.RD_KAFKA_CONF_OK:
            raise ConfigurationError("librdkafka refused %s=%r: %s" % (key, text, string(buf).strip()))

    def get(self, key):
        """``rd_kafka_conf_get``: the current value of ``key`` as a string (None if unknown)."""
        size = ffi.new("size_t *", 4096)
        buf = ffi.new("char[]", 4096)
        if lib.rd_kafka_conf_get(self._ptr, key.encode(), buf, size) != lib.RD_KAFKA_CONF_OK:
            return None
        return string(buf)

    def take(self):
        """Give up the pointer (to ``rd_kafka_new``, which owns it on success)."""
        ptr, self._ptr = self._ptr, None
        return ptr

    def destroy(self):
        """``rd_kafka_conf_destroy``, unless the pointer was taken."""
        if self._ptr is not None:
            lib.rd_kafka_conf_destroy(self._ptr)
            self._ptr = None

    def __del__(self):
        self.destroy()
