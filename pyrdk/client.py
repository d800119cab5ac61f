"""KafkaClient: the entry point, holding the cluster (pykafka's ``KafkaClient``).

    from pyrdk import KafkaClient
    client = KafkaClient(hosts="127.0.0.1:9092")
    topic = client.topics["events"]
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, Optional, Union

from pyrdk.broker import Broker
from pyrdk.cluster import Cluster, TopicDict
from pyrdk.common import SslConfig, check_bool, check_config, check_int
from pyrdk.rd import conf
from pyrdk.rd.handle import stats_enabled

log = logging.getLogger(__name__)

DEFAULT_HOSTS = "127.0.0.1:9092"


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")


def _choice(name, value, choices):
    """``value`` upper-cased if it is one of ``choices``, else ValueError naming them."""
    if not isinstance(value, str) or value.upper() not in choices:
        raise ValueError("%s must be one of %s, not %r" % (name, ", ".join(choices), value))
    return value.upper()


def security_config(ssl_config=None, security_protocol=None, sasl_mechanism=None,
                    sasl_plain_username=None, sasl_plain_password=None, oauth_cb=None):
    """The librdkafka properties (``security.protocol``, ``ssl.*``, ``sasl.*``) for
    ``KafkaClient``'s TLS and SASL arguments, checked together; ``oauth_cb`` rides along
    under its own key, as in confluent-kafka's configuration."""
    if ssl_config is not None and not callable(getattr(ssl_config, "rdkafka_config", None)):
        # its type only: a dict or tuple given in its place holds the key's password
        raise TypeError("ssl_config must be a pyrdk.connection.SslConfig, not a %s" % type(ssl_config).__name__)
    cafile = getattr(ssl_config, "cafile", None)
    if isinstance(cafile, (str, bytes, os.PathLike)) and os.path.isdir(cafile):
        # librdkafka would take it as a directory of certificates under their hash names, find
        # none there, and refuse every broker as signed by an unknown CA
        raise ValueError("ssl_config's cafile %r is a directory: give the PEM file of the CA that signed the "
                         "brokers' certificates (a directory of certificates under their hash names, as "
                         "c_rehash makes, goes in rdkafka_config={'ssl.ca.location': ...})" % (cafile,))
    if oauth_cb is not None and not callable(oauth_cb):
        # its type only: what is given in its place may be the token itself
        raise TypeError("oauth_cb must be a callable returning (token, expiry), not a %s" % type(oauth_cb).__name__)
    if sasl_mechanism is not None:
        sasl_mechanism = _choice("sasl_mechanism", sasl_mechanism, SASL_MECHANISMS)
    elif oauth_cb is not None:
        sasl_mechanism = "OAUTHBEARER"
    if security_protocol is not None:
        security_protocol = _choice("security_protocol", security_protocol, SECURITY_PROTOCOLS)
    elif sasl_mechanism is not None or sasl_plain_username is not None:
        security_protocol = "SASL_SSL" if ssl_config is not None else "SASL_PLAINTEXT"
    elif ssl_config is not None:
        security_protocol = "SSL"
    else:
        return {}
    sasl = security_protocol.startswith("SASL_")
    if sasl and sasl_mechanism is None:
        sasl_mechanism = "PLAIN"  # kafka-python's default
    if not sasl and (sasl_mechanism is not None or sasl_plain_username is not None):
        raise ValueError("sasl_mechanism and sasl_plain_username need security_protocol "
                         "SASL_PLAINTEXT or SASL_SSL, not %s" % security_protocol)
    if ssl_config is not None and not security_protocol.endswith("SSL"):
        raise ValueError("ssl_config needs security_protocol SSL or SASL_SSL, not %s" % security_protocol)
    if oauth_cb is not None and sasl_mechanism != "OAUTHBEARER":
        raise ValueError("oauth_cb needs sasl_mechanism OAUTHBEARER, not %s" % sasl_mechanism)
    config = {"security.protocol": security_protocol.lower()}
    if ssl_config is not None:
        config.update(ssl_config.rdkafka_config())
        config["security.protocol"] = security_protocol.lower()
    if sasl:
        config["sasl.mechanism"] = sasl_mechanism
    if sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        for name, value in (("sasl_plain_username", sasl_plain_username),
                            ("sasl_plain_password", sasl_plain_password)):
            if not isinstance(value, str) or not value:
                raise ValueError("sasl_mechanism %s needs %s, a non-empty str (given: %s)"
                                 % (sasl_mechanism, name, "an empty str" if value == "" else
                                    type(value).__name__))
        config["sasl.username"] = sasl_plain_username
        config["sasl.password"] = sasl_plain_password
    if oauth_cb is not None:
        config["oauth_cb"] = oauth_cb
    return config


def check_property(name, value):
    """``ConfigurationError`` (or ``TypeError``) if librdkafka refuses the property
    (``rd_kafka_conf_set`` on a scratch conf, as every client does before it makes a handle)."""
    conf.check({name: value}, {})


def _bootstrap_servers(hosts, name="hosts", security_protocol=None):
    """``hosts`` (str or bytes) as librdkafka's ``bootstrap.servers``; TypeError or ValueError
    naming ``hosts`` (or ``name``) for what is not a list of ``[protocol://]host[:port]`` with
    ports from 1 to 65535 in ASCII digits, hosts without blanks and protocols librdkafka knows
    (librdkafka would take a bad port as another, or a host it cannot parse as none at all,
    and wait for it to answer); a protocol must be ``security_protocol``, when given."""
    if isinstance(hosts, bytes):
        try:
            hosts = hosts.decode()
        except UnicodeDecodeError:
            raise TypeError("%s must be a 'host:port,...' string (bytes must be UTF-8), not %r"
                            % (name, hosts)) from None
    entries = [h.strip() for h in hosts.split(",") if h.strip()] if isinstance(hosts, str) else []
    if not entries:
        raise TypeError("%s must be a non-empty 'host:port,...' string, not %r" % (name, hosts))
    for entry in entries:
        protocol, host, port = conf.split_address(entry)
        if protocol is not None and protocol.upper() not in SECURITY_PROTOCOLS:
            raise ValueError("%s: %r names protocol %r, not one of %s" % (name, entry, protocol,
                                                                        ", ".join(SECURITY_PROTOCOLS)))
        if protocol is not None and security_protocol and protocol.upper() != security_protocol.upper():
            raise ValueError("%s: %r names protocol %r, but security.protocol is %s: librdkafka connects "
                             "only to brokers of that protocol" % (name, entry, protocol, security_protocol))
        if not host or any(c.isspace() for c in host) or \
                (port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535)):
            raise ValueError("%s: %r is not host:port with a port from 1 to 65535" % (name, entry))
    return ",".join(entries)


class KafkaClient:
    """A connection to a Kafka cluster.

    :param hosts: comma-separated ``host:port`` bootstrap brokers (``bootstrap.servers``);
        default: the brokers registered in ZooKeeper when ``zookeeper_hosts`` is given (as
        pykafka), else ``127.0.0.1:9092``
    :param zookeeper_hosts: ZooKeeper connect string (``host:port,...[/chroot]``): the default
        of ``get_balanced_consumer``, and where the brokers are found without ``hosts``
        (``/brokers/ids``, read once with kazoo)
    :param socket_timeout_ms: network timeout (``socket.timeout.ms``) and the bound on
        metadata requests: an unreachable cluster raises ``NoBrokersAvailableError`` then
    :param offsets_channel_socket_timeout_ms: accepted for pykafka compatibility
    :param use_greenlets: not supported (librdkafka uses native threads)
    :param exclude_internal_topics: hide topics whose names start with ``__``
    :param source_address: not supported by librdkafka; a non-empty value is logged and ignored
    :param ssl_config: a :class:`pyrdk.common.SslConfig` (TLS: ``security.protocol=ssl``,
        or ``sasl_ssl`` with a SASL mechanism)
    :param broker_version: ignored (librdkafka negotiates API versions)
    :param statistics_interval_ms: how often librdkafka's statistics reach the producers and
        consumers made from this client (``statistics.interval.ms``; 0, the default, for never):
        their ``stats()`` gives the last snapshot, a dict
    :param stats_callback: called with each snapshot (a dict) of those producers and consumers,
        in the thread that polls them (pass a :class:`pyrdk.metrics.PrometheusExporter` to
        export them); with statistics off here, it is the callback of the producers and
        consumers that turn them on themselves
    :param rdkafka_config: any librdkafka properties, applied last
    :param security_protocol: ``"PLAINTEXT"``, ``"SSL"``, ``"SASL_PLAINTEXT"`` or
        ``"SASL_SSL"`` (``security.protocol``), as in kafka-python and aiokafka; by default
        taken from ``ssl_config`` and ``sasl_mechanism``
    :param sasl_mechanism: ``"PLAIN"``, ``"SCRAM-SHA-256"``, ``"SCRAM-SHA-512"``,
        ``"OAUTHBEARER"`` or ``"GSSAPI"`` (``sasl.mechanism``; default ``"PLAIN"`` under a
        SASL protocol, ``"OAUTHBEARER"`` with ``oauth_cb``)
    :param sasl_plain_username: the SASL user name (``sasl.username``), for PLAIN and SCRAM
    :param sasl_plain_password: its password (``sasl.password``)
    :param oauth_cb: for OAUTHBEARER, a callable taking ``sasl.oauthbearer.config`` and
        returning ``(token, expiry)`` (expiry in seconds since the epoch) or ``(token, expiry,
        principal, extensions)``, as confluent-kafka's ``oauth_cb``; librdkafka's background
        thread asks for it, and it runs in a thread of its own that ``close()`` does not wait
        for, for the first token and again before each token expires
        (``rd_kafka_conf_set_oauthbearer_token_refresh_cb``). If it raises, the next call
        raises ``AuthenticationError`` naming its exception.

    A broker certificate that TLS refuses raises ``SslError`` (its ``reason`` says why) and
    a refused login raises ``AuthenticationError``, from the constructor or from the next
    call of a producer or consumer, as soon as librdkafka reports it.
    """

    def __init__(self, hosts: Optional[Union[str, bytes]] = None, zookeeper_hosts: Optional[str] = None,
                 socket_timeout_ms: int = 30 * 1000, offsets_channel_socket_timeout_ms: int = 10 * 1000,
                 use_greenlets: bool = False, exclude_internal_topics: bool = True, source_address: Any = "",
                 ssl_config: Optional[SslConfig] = None, broker_version: str = "0.9.0",
                 rdkafka_config: Optional[dict[str, Any]] = None, statistics_interval_ms: int = 0,
                 stats_callback: Optional[Callable[[dict[str, Any]], None]] = None,
                 security_protocol: Optional[str] = None, sasl_mechanism: Optional[str] = None,
                 sasl_plain_username: Optional[str] = None, sasl_plain_password: Optional[str] = None,
                 oauth_cb: Optional[Callable[..., tuple[str, float]]] = None) -> None:
        check_int("socket_timeout_ms", socket_timeout_ms, 1)
        check_int("statistics_interval_ms", statistics_interval_ms, 0)
        if stats_callback is not None and not callable(stats_callback):
            raise TypeError("stats_callback must be callable (stats dict) -> None, not %r" % (stats_callback,))
        check_int("offsets_channel_socket_timeout_ms", offsets_channel_socket_timeout_ms, 0)
        rdkafka_config = check_config("rdkafka_config", rdkafka_config)
        if zookeeper_hosts is not None and (not isinstance(zookeeper_hosts, str) or not zookeeper_hosts.strip()):
            raise TypeError("zookeeper_hosts must be a non-empty 'host:port,...[/chroot]' string, not %r"
                            % (zookeeper_hosts,))
        security = security_config(ssl_config, security_protocol, sasl_mechanism,
                                   sasl_plain_username, sasl_plain_password, oauth_cb)
        # the protocol this client speaks (rdkafka_config's wins), lower case
        speaks = conf.to_str("security.protocol", rdkafka_config.get(
            "security.protocol", security.get("security.protocol", "plaintext"))).lower()
        if hosts is None:
            hosts = DEFAULT_HOSTS
            if zookeeper_hosts:
                from pyrdk.zookeeper import brokers_from_zookeeper
                # the listener of that protocol: SASL_SSL or SASL_PLAINTEXT under SASL, not
                # the SSL or PLAINTEXT one
                hosts = brokers_from_zookeeper(zookeeper_hosts, speaks, socket_timeout_ms)
        hosts = _bootstrap_servers(hosts)
        if check_bool("use_greenlets", use_greenlets):
            raise ValueError("use_greenlets=True is not supported: librdkafka runs its own threads")
        if source_address:
            log.warning("source_address=%r is ignored: librdkafka cannot bind a source address",
                        source_address)
        self._zookeeper_connect = zookeeper_hosts
        self._socket_timeout_ms = socket_timeout_ms
        self._offsets_channel_socket_timeout_ms = offsets_channel_socket_timeout_ms
        config: dict[str, Any] = {"bootstrap.servers": hosts, "socket.timeout.ms": socket_timeout_ms,
                                  "reconnect.backoff.ms": conf.RECONNECT_BACKOFF_MS}
        if statistics_interval_ms:
            config["statistics.interval.ms"] = statistics_interval_ms
        config.update(security)
        config.update(rdkafka_config)
        if stats_callback is not None and not stats_enabled(config):
            log.warning("KafkaClient: stats_callback is called only by the producers and consumers that turn "
                        "statistics on themselves: they are off on this client (statistics_interval_ms)")
        if ssl_config is not None and not speaks.endswith("ssl"):
            # rdkafka_config's security.protocol wins: the CA and the key would be ignored
            raise ValueError("ssl_config needs security.protocol SSL or SASL_SSL, not %s (see rdkafka_config)"
                             % speaks)
        if (sasl_mechanism is not None or sasl_plain_username is not None) and not speaks.startswith("sasl_"):
            # ... and the user name and password would never be sent
            raise ValueError("sasl_mechanism and sasl_plain_username need security.protocol SASL_PLAINTEXT or "
                             "SASL_SSL, not %s (see rdkafka_config)" % speaks)
        for key in ("bootstrap.servers", "metadata.broker.list"):  # as hosts, or given in rdkafka_config
            if key in config:
                value = config[key]
                config[key] = _bootstrap_servers(
                    conf.to_str(key, value) if isinstance(value, (list, tuple)) else value,
                    "rdkafka_config[%r]" % key if key in rdkafka_config else "hosts",
                    conf.to_str("security.protocol", config.get("security.protocol", "plaintext")))
        conf.check(config, {"bootstrap.servers": "hosts", "socket.timeout.ms": "socket_timeout_ms",
                            "statistics.interval.ms": "statistics_interval_ms"}, rdkafka_config)
        self.cluster = Cluster(config, socket_timeout_ms=socket_timeout_ms,
                               exclude_internal_topics=check_bool("exclude_internal_topics", exclude_internal_topics),
                               zookeeper_hosts=zookeeper_hosts, stats_callback=stats_callback)
        self._handler = self.cluster.handler

    @property
    def brokers(self) -> dict[int, Broker]:
        """``{broker_id: Broker}`` (the cluster's, renewed by each metadata refresh)."""
        return self.cluster.brokers

    @property
    def topics(self) -> TopicDict:
        """``{name: Topic}`` (the cluster's ``TopicDict``)."""
        return self.cluster.topics

    def update_cluster(self) -> None:
        """Refresh known brokers and topics."""
        self.cluster.update()

    def close(self) -> None:
        """Release the cluster's librdkafka handle. Producers and consumers made before go on
        until they are stopped; the client makes no more (``KafkaException``)."""
        self.cluster.close()

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<pyrdk.client.KafkaClient at %#x (hosts=%s)>" % (
            id(self), self.cluster.rdkafka_config.get("bootstrap.servers"))
