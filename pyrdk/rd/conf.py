"""Conf: an owned ``rd_kafka_conf_t`` (``rd_kafka_conf_new`` / ``rd_kafka_conf_set``).

Topic-level properties go through the same call: librdkafka puts them in the default
topic configuration.
"""
import functools
import numbers
import os

from pyrdk._ffi import ffi, lib, string
from pyrdk.exceptions import NO_OAUTH_TOKEN, ConfigurationError
from pyrdk.rd import errors

# reconnect.backoff.ms for every handle, unless given: the Java client's 50 ms, not
# librdkafka's 100. librdkafka also waits half of it (sparse_connect_intvl) before it
# connects to the first broker a bootstrap server named, so a new client's first request
# waits 25 ms there instead of 50.
RECONNECT_BACKOFF_MS = 50


def split_address(entry):
    """``(protocol, host, port)`` of a ``bootstrap.servers`` entry ``[protocol://]host[:port]``
    (str): protocol None without ``://``, port None without a ``:`` after the host (an IPv6
    host is in brackets)."""
    protocol, scheme, address = entry.rpartition("://")
    host, colon, port = address.rpartition(":") if ":" in address.rpartition("]")[2] else (address, "", "")
    return (protocol if scheme else None), host, (port if colon else None)


def to_str(key, value):
    """A Python config value as librdkafka's string, or TypeError naming the key."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, numbers.Integral):  # numpy's integers, say, which are no ints
        return str(int(value))
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError as exc:
            raise ConfigurationError("rdkafka_config[%r]: the value %s is not UTF-8 (%s)"
                                     % (key, _shown(key, value), exc.reason)) from None
    if isinstance(value, (list, tuple)):
        return ",".join(to_str(key, v) for v in value)
    raise TypeError("rdkafka_config[%r] must be a str, bytes, int, float or bool, not %s"
                    % (key, type(value).__name__))


def _c_string(key, what, text):
    """``text`` (the property name or value of ``key``) as the bytes of a C string, or
    ConfigurationError saying why it cannot be one."""
    shown = _shown(key, text) if what == "value" else repr(text)
    try:
        data = text.encode()
    except UnicodeEncodeError as exc:
        raise ConfigurationError("rdkafka_config[%r]: the %s %s cannot be encoded as UTF-8 (%s)"
                                 % (key, what, shown, exc.reason)) from None
    if b"\0" in data:
        raise ConfigurationError("rdkafka_config[%r]: the %s %s holds a NUL character" % (key, what, shown))
    return data


# Words of the names of librdkafka's properties that hold secrets, and the wider set a name
# librdkafka does not know is judged by: a misspelled secret (sasl.passwrd, ssl.key.pasword).
_SECRET_WORDS = ("password", "passphrase", "secret", "jaas", "key.pem", "token")
_UNKNOWN_SECRET_WORDS = ("pas", "pwd", "word", "secr", "jaas", "key", "tok", "cred", "auth", "priv")


def _shown(key, text):
    """A value as an error may show it: hidden where the property may hold a secret, or
    where a property librdkafka does not know is named like one."""
    name = key.lower()
    words = _SECRET_WORDS if key in roles() else _UNKNOWN_SECRET_WORDS
    secret = any(word in name for word in words)
    return "<%d characters, not shown>" % len(text) if secret else repr(text)


# The files librdkafka loads in rd_kafka_new, with the argument of SslConfig (and of
# pyrdk.aio.helpers.create_ssl_context) that sets each.
_TLS_FILES = (("ssl.ca.location", "cafile"), ("ssl.certificate.location", "certfile"),
              ("ssl.key.location", "keyfile"))


def tls_file_problem(config, reason):
    """What is wrong with the TLS file ``rd_kafka_new`` could not load, naming the property,
    the file and the setting to fix; None if ``reason`` (librdkafka's error string, as
    ``ssl.key.location failed: error:...:PEM lib``) names no such file. librdkafka passes on
    OpenSSL's words only (``BIO lib``, ``PEM lib``), which say neither."""
    if reason.startswith("Private key check failed") and config.get("ssl.certificate.location") is None:
        return "ssl.key.location needs ssl.certificate.location (SslConfig's certfile): the certificate " \
               "the key belongs to"
    for key, argument in _TLS_FILES:
        if not reason.startswith(key + " failed") or not isinstance(config.get(key), (str, bytes)):
            continue
        path = os.fsdecode(config[key])
        where = "%s=%r (SslConfig's %s)" % (key, path, argument)
        if not os.path.exists(path):
            return "%s: no such file" % where
        if os.path.isdir(path):
            return "%s is a directory, not a PEM file" % where
        try:
            with open(path, "rb") as f:
                head = f.read(1 << 20)
        except OSError as exc:
            return "%s cannot be read: %s" % (where, exc.strerror)
        if key != "ssl.key.location":
            if b"-----BEGIN CERTIFICATE-----" not in head:
                return "%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)" % where
            return None
        if "key values mismatch" in reason:
            return "%s is not the key of the certificate in ssl.certificate.location (SslConfig's " \
                   "certfile)" % where
        if b"ENCRYPTED" in head:
            if config.get("ssl.key.password") is None:
                return "%s holds an encrypted key: set ssl.key.password (SslConfig's password)" % where
            return "%s holds an encrypted key that ssl.key.password (SslConfig's password) does not " \
                   "decrypt: the passphrase is wrong" % where
        if b"PRIVATE KEY-----" not in head:
            return "%s holds no PEM private key (-----BEGIN ... PRIVATE KEY-----)" % where
    return None


class Conf:
    """A librdkafka configuration under construction; ``rd_kafka_new`` takes it over."""

    def __init__(self, config=None):
        self._ptr = lib.rd_kafka_conf_new()
        for key, value in (config or {}).items():
            self.set(key, value)

    def set(self, key, value):
        """``rd_kafka_conf_set``; ConfigurationError names the key, the value and the reason."""
        if not isinstance(key, str):
            raise TypeError("rdkafka_config keys must be str (librdkafka property names), not %s: %r"
                            % (type(key).__name__, key))
        text = to_str(key, value)
        buf = errors.errstr()
        res = lib.rd_kafka_conf_set(self._ptr, _c_string(key, "property name", key), _c_string(key, "value", text),
                                    buf, errors.ERRSTR_SIZE)
        if res != lib.RD_KAFKA_CONF_OK:
            raise ConfigurationError("librdkafka refused %s=%s: %s" % (key, _shown(key, text), string(buf).strip()))

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


def check(config, arguments, given=()):
    """Set ``config`` on a scratch ``rd_kafka_conf_t``, so that a property librdkafka refuses
    is raised before any handle is made (``oauth_cb`` is not a property: ``Handle`` takes
    it), as are SASL OAUTHBEARER without a source of tokens and an ``oauth_cb`` without SASL
    OAUTHBEARER. The error names the key; a
    property set from a constructor argument (``arguments``: ``{property: argument name}``)
    is named as that argument, unless the program gave the property itself (``given``, its
    ``rdkafka_config``)."""
    conf = Conf()
    try:
        for key, value in config.items():
            if key == "oauth_cb":
                continue
            try:
                conf.set(key, value)
            except (ConfigurationError, TypeError) as exc:
                if key not in arguments or key in given:
                    raise
                raise type(exc)("%s=%r: %s" % (arguments[key], value, exc)) from None
        protocol, mechanism = str(conf.get("security.protocol")), conf.get("sasl.mechanisms")
        if callable(config.get("oauth_cb")) and (mechanism != "OAUTHBEARER" or not protocol.startswith("sasl_")):
            # librdkafka refuses it only once the handle is made (rd_kafka_sasl_background_callbacks_enable),
            # naming neither
            raise ConfigurationError("oauth_cb needs sasl.mechanism OAUTHBEARER and security.protocol "
                                     "SASL_PLAINTEXT or SASL_SSL, not sasl.mechanism=%s and security.protocol=%s"
                                     % (mechanism, protocol))
        if protocol.startswith("sasl_") \
                and mechanism == "OAUTHBEARER" \
                and config.get("oauth_cb") is None and conf.get("sasl.oauthbearer.method") != "oidc" \
                and conf.get("enable.sasl.oauthbearer.unsecure.jwt") != "true":
            # librdkafka has no token then, and its connections wait for one without a word
            raise ConfigurationError(NO_OAUTH_TOKEN)
    finally:
        conf.destroy()




# The kind of a Handle ("producer" or "consumer") and the role letter librdkafka's property
# table gives what only the other kind reads.
_OTHER_ROLE = {"producer": "C", "consumer": "P"}


@functools.lru_cache(maxsize=None)
def roles():
    """``{property: "C", "P" or "*"}``: the clients each property applies to (consumers,
    producers, both), read from ``rd_kafka_conf_properties_show``'s table."""
    text = lib.pyrdk_conf_properties()
    if text == ffi.NULL:
        return {}
    try:
        table = ffi.string(text).decode("utf-8", "replace")
    finally:
        lib.pyrdk_free(text)
    found = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) > 2 and cells[1] in ("C", "P", "*"):
            found.setdefault(cells[0], cells[1])
    return found


def for_kind(config, kind):
    """``config`` without the properties librdkafka reads only in the other kind of client
    than ``kind`` ("producer" or "consumer"): a configuration that a KafkaClient shares
    between its producers and consumers would otherwise make librdkafka log a CONFWARN
    for each such property in every handle."""
    other, known = _OTHER_ROLE[kind], roles()
    return {key: value for key, value in config.items() if known.get(key) != other}
