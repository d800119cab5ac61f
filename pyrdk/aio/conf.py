"""What aiokafka's producer and consumer options share, as librdkafka properties."""
import asyncio
import concurrent.futures
import inspect
import time

from pyrdk.aio import helpers
from pyrdk.aio.abc import AbstractTokenProvider
from pyrdk.exceptions import ConfigurationError
from pyrdk.rd import conf as rd_conf

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "GSSAPI", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
TOKEN_LIFETIME_S = 60  # how long librdkafka keeps a provider's token: it asks again 80% through


def bootstrap(servers):
    """``bootstrap.servers`` from aiokafka's ``bootstrap_servers`` (a str or a list of str);
    a host without a port gets 9092, as in aiokafka."""
    if isinstance(servers, str):
        servers = servers.split(",")
    if not isinstance(servers, (list, tuple)) or not servers or \
            not all(isinstance(s, str) and s.strip() for s in servers):
        raise ConfigurationError("bootstrap_servers must be 'host[:port]' or a list of them, not %r" % (servers,))
    return ",".join(s.strip() if ":" in s else s.strip() + ":9092" for s in servers)


# The librdkafka property each option sets, to name the option when librdkafka refuses it.
ARGUMENTS = {
    "client.id": "client_id", "metadata.max.age.ms": "metadata_max_age_ms",
    "topic.metadata.refresh.interval.ms": "metadata_max_age_ms", "socket.timeout.ms": "request_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms", "connections.max.idle.ms": "connections_max_idle_ms",
    "batch.size": "max_batch_size", "message.max.bytes": "max_request_size", "linger.ms": "linger_ms",
    "request.timeout.ms": "request_timeout_ms", "message.timeout.ms": "request_timeout_ms",
    "transaction.timeout.ms": "transaction_timeout_ms", "auto.commit.interval.ms": "auto_commit_interval_ms",
    "fetch.wait.max.ms": "fetch_max_wait_ms", "fetch.max.bytes": "fetch_max_bytes",
    "fetch.min.bytes": "fetch_min_bytes", "max.partition.fetch.bytes": "max_partition_fetch_bytes",
    "session.timeout.ms": "session_timeout_ms", "heartbeat.interval.ms": "heartbeat_interval_ms",
    "max.poll.interval.ms": "max_poll_interval_ms",
}


def check(config, rdkafka_config):
    """Refuse at construction what librdkafka would refuse at ``start()``, naming the option
    that set it (or the ``rdkafka_config`` key the program gave)."""
    rd_conf.check(config, ARGUMENTS, rdkafka_config or {})


def common(bootstrap_servers, client_id, metadata_max_age_ms, request_timeout_ms, retry_backoff_ms,
           security_protocol, ssl_context, connections_max_idle_ms, sasl_mechanism, sasl_plain_username,
           sasl_plain_password, sasl_kerberos_service_name, sasl_oauth_token_provider, rdkafka_config):
    """The librdkafka properties of the options both clients take. ``"SSL"`` and ``"SASL_SSL"``
    need an ``ssl_context`` (or ``ssl.*`` properties in ``rdkafka_config``), as in aiokafka,
    whose clients refuse them without one: no context silently trusting the system's CAs."""
    if security_protocol not in SECURITY_PROTOCOLS:
        raise ConfigurationError("security_protocol must be one of %s, not %r"
                                 % (", ".join(SECURITY_PROTOCOLS), security_protocol))
    if security_protocol.endswith("SSL") and ssl_context is None and \
            not (isinstance(rdkafka_config, dict) and any(str(key).startswith("ssl.") for key in rdkafka_config)):
        raise ConfigurationError("security_protocol=%r needs an ssl_context, as in aiokafka: pass "
                                 "ssl_context=pyrdk.aio.helpers.create_ssl_context(cafile=...) (with no "
                                 "argument, it trusts the system's CA certificates)" % security_protocol)
    if sasl_oauth_token_provider is not None:
        if not isinstance(sasl_oauth_token_provider, AbstractTokenProvider):
            raise ConfigurationError("sasl_oauth_token_provider must implement pyrdk.aio.abc.AbstractTokenProvider "
                                     "(aiokafka.abc's), not %s" % type(sasl_oauth_token_provider).__name__)
        if sasl_mechanism != "OAUTHBEARER" or not security_protocol.startswith("SASL"):
            raise ConfigurationError("sasl_oauth_token_provider needs sasl_mechanism='OAUTHBEARER' and "
                                     "security_protocol 'SASL_SSL' or 'SASL_PLAINTEXT', not %r and %r"
                                     % (sasl_mechanism, security_protocol))
    config = {
        "bootstrap.servers": bootstrap(bootstrap_servers),
        "client.id": client_id,
        "metadata.max.age.ms": metadata_max_age_ms,
        # aiokafka refreshes its metadata this often, which is how a pattern subscription
        # finds new topics; librdkafka's own refresh is at most hourly.
        "topic.metadata.refresh.interval.ms": min(metadata_max_age_ms, 3600000)
        if isinstance(metadata_max_age_ms, int) else metadata_max_age_ms,
        "socket.timeout.ms": request_timeout_ms,
        "retry.backoff.ms": retry_backoff_ms,
        "reconnect.backoff.ms": rd_conf.RECONNECT_BACKOFF_MS,
        "security.protocol": security_protocol.lower(),
    }
    if ssl_context is not None:
        config.update(helpers.rdkafka_config(ssl_context))
    if connections_max_idle_ms is not None:
        config["connections.max.idle.ms"] = connections_max_idle_ms
    if security_protocol.startswith("SASL"):
        if sasl_mechanism not in SASL_MECHANISMS:
            raise ConfigurationError("sasl_mechanism must be one of %s, not %r"
                                     % (", ".join(SASL_MECHANISMS), sasl_mechanism))
        config["sasl.mechanism"] = sasl_mechanism
        given = rdkafka_config if isinstance(rdkafka_config, dict) else {}
        for option, value, name in (("sasl_plain_username", sasl_plain_username, "sasl.username"),
                                    ("sasl_plain_password", sasl_plain_password, "sasl.password")):
            if sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and value is None and name not in given:
                raise ConfigurationError("sasl_mechanism=%r needs sasl_plain_username and sasl_plain_password "
                                         "(%s is not given), as in aiokafka" % (sasl_mechanism, option))
        if sasl_plain_username is not None:
            config["sasl.username"] = sasl_plain_username
        if sasl_plain_password is not None:
            config["sasl.password"] = sasl_plain_password
        if sasl_mechanism == "GSSAPI":
            config["sasl.kerberos.service.name"] = sasl_kerberos_service_name
        if sasl_oauth_token_provider is not None:
            config["oauth_cb"] = TokenCallback(sasl_oauth_token_provider, request_timeout_ms)
    return config


class TokenCallback:
    """aiokafka's ``sasl_oauth_token_provider`` as an ``oauth_cb``: librdkafka asks for a
    token from its background thread (``rd_kafka_oauthbearer_set_token``), and this awaits
    the provider's ``token()`` on the client's event loop (``loop``, set by ``start()``)
    within ``request_timeout_ms``, with ``extensions()``. aiokafka asks at each login;
    librdkafka keeps a token ``TOKEN_LIFETIME_S`` and asks again 80% through, so the
    provider's own reuse and refresh of its tokens, which aiokafka asks of it, still decide."""

    name = "sasl_oauth_token_provider.token()"  # as errors call it

    def __init__(self, provider, timeout_ms):
        self.provider = provider
        self.timeout_s = timeout_ms / 1000.0 if isinstance(timeout_ms, (int, float)) else 40.0
        self.loop = None

    def __call__(self, config):
        loop = self.loop
        if loop is None or loop.is_closed():
            raise RuntimeError("the client's event loop is closed: sasl_oauth_token_provider.token() cannot run")
        future = asyncio.run_coroutine_threadsafe(self._ask(), loop)
        try:
            return future.result(self.timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError("no token within request_timeout_ms (%d ms)" % (self.timeout_s * 1000)) from None

    async def _ask(self):
        token = await self.provider.token()
        if inspect.isawaitable(token):  # aiokafka's docs' provider returns run_in_executor()'s future
            token = await token
        extensions = self.provider.extensions()
        return token, time.time() + TOKEN_LIFETIME_S, "", extensions

